package agingbloom

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Unix(1_800_000_000, 0)

func ids(prefix string, n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("perm-%s-%d", prefix, i)
	}
	return s
}

// What was added is never denied within its window, whenever the
// generations turn: a "no" there would let the broker answer an id twice.
func TestAStringAddedIsKeptForItsWindow(t *testing.T) {
	const w = time.Minute
	for _, tt := range []struct {
		name  string
		added time.Duration // after the first Add, which starts a generation
		looks []time.Duration
	}{
		{"in the first generation", 0, []time.Duration{0, w / 2, w - 1}},
		{"in the middle of a generation", w/2 - 1, []time.Duration{w / 2, w, w + w/2 - 2}},
		// The look at w turns the generation; the next turn is a window
		// later, past this string's window.
		{"late in a generation", w - 1, []time.Duration{w, w + w/2, 2*w - 2}},
		{"in the second", w + w/10, []time.Duration{w + w/5, 2 * w, 2*w + w/10 - 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := New(1<<12, w)
			f.Add("perm-first", t0)
			added := ids("kept", 300)
			for _, s := range added {
				f.Add(s, t0.Add(tt.added))
			}
			for _, after := range tt.looks {
				if after-tt.added >= w {
					t.Fatalf("bad case: a look %s after the add is past the window", after-tt.added)
				}
				for _, s := range added {
					if !f.MayContain(s, t0.Add(after)) {
						t.Fatalf("%s, added %s after the first, denied %s after it: within its window", s, tt.added, after)
					}
				}
			}
		})
	}
}

// Strings are forgotten by two windows after they were added, so that a
// long flood's ids do not fill the filter for ever.
func TestAStringIsForgottenTwoWindowsOn(t *testing.T) {
	const w = time.Minute
	f := New(1<<12, w)
	old := ids("old", 200)
	for _, s := range old {
		f.Add(s, t0)
	}
	// One look a window on turns the generation: old is still there.
	if !f.MayContain(old[0], t0.Add(w)) {
		t.Fatal("forgotten after one window")
	}
	f.Add("perm-new", t0.Add(w+w/2))
	for _, s := range old {
		if f.MayContain(s, t0.Add(2*w)) {
			t.Fatalf("%s still there two windows after it was added", s)
		}
	}
	if !f.MayContain("perm-new", t0.Add(2*w)) {
		t.Fatal("a string added since was forgotten with the old ones")
	}
	// Idle for longer than both generations: the current one goes too.
	f.Add("perm-late", t0.Add(4*w))
	if f.MayContain("perm-late", t0.Add(10*w)) {
		t.Fatal("a string still there long after its window")
	}
}

// A turn late by most of a window does not keep the previous generation
// a window longer than its strings need.
func TestALateTurnKeepsNothingLonger(t *testing.T) {
	const w = time.Minute
	f := New(1<<12, w)
	f.Add("perm-first", t0)
	f.Add("perm-new", t0.Add(w/2))
	// The first call past the window comes late, at 2w − 1: one turn.
	if !f.MayContain("perm-new", t0.Add(2*w-1)) {
		t.Fatal("forgotten within two windows")
	}
	if f.MayContain("perm-new", t0.Add(2*w+w/2)) {
		t.Fatal("a string still there two windows after it was added, after a late turn")
	}
}

// Strings never added are rarely "perhaps": each is one look on disk for
// the broker.
func TestFewStringsNeverAddedMayBeThere(t *testing.T) {
	f := New(1<<16, time.Hour)
	for _, s := range ids("added", 4096) { // a quarter of the bits or so
		f.Add(s, t0)
	}
	never := ids("never", 100_000)
	perhaps := 0
	for _, s := range never {
		if f.MayContain(s, t0) {
			perhaps++
		}
	}
	// About 0.23% expected (0.22⁴ with one generation used).
	if perhaps > len(never)/100 {
		t.Errorf("%d of %d strings never added may be there, want at most 1%%", perhaps, len(never))
	}
}

func TestAnUnusedFilterHoldsNothingAndCostsNothing(t *testing.T) {
	f := New(1<<23, time.Minute)
	if f.MayContain("perm-x", t0) {
		t.Error("an empty filter may contain a string")
	}
	if f.cur != nil || f.prev != nil {
		t.Error("memory taken before the first Add")
	}
	if n := testing.AllocsPerRun(100, func() { f.MayContain("perm-x", t0) }); n != 0 {
		t.Errorf("MayContain allocates %v times", n)
	}
}

func TestSizeIsAPowerOfTwo(t *testing.T) {
	for _, tt := range []struct{ size, want int }{{0, 64}, {1, 64}, {64, 64}, {65, 128}, {1000, 1024}, {1 << 23, 1 << 23}} {
		if got := int(New(tt.size, time.Second).mask + 1); got != tt.want {
			t.Errorf("New(%d): %d bits, want %d", tt.size, got, tt.want)
		}
	}
}

// Callers read the clock before they take the lock, so their times come
// out of order, while the generations turn (a window of 1,000 ticks of
// a clock every call moves). A string is denied only if a window of the
// others' calls passed between its Add and the look.
func TestConcurrentUse(t *testing.T) {
	const window = 1000
	f := New(1<<12, window*time.Microsecond)
	var clock atomic.Int64
	tick := func() (int64, time.Time) {
		n := clock.Add(1)
		return n, t0.Add(time.Duration(n) * time.Microsecond)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 5000 {
				n, now := tick()
				s := fmt.Sprintf("perm-%d-%d", g, i)
				f.Add(s, now)
				_, later := tick()
				if !f.MayContain(s, later) && clock.Load()-n < window {
					t.Errorf("%s denied %d ticks after it was added", s, clock.Load()-n)
					return
				}
			}
		})
	}
	wg.Wait()
	if clock.Load() < 10*window {
		t.Fatalf("only %d ticks: the generations never turned", clock.Load())
	}
}
