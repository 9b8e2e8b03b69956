package serve

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The queue hands out jobs in turn across requesters, each requester's in
// its own order, whatever was queued first.
func TestFairQueueTakesTurns(t *testing.T) {
	tests := []struct {
		name   string
		pushes []string // requester keys, in the order their jobs are queued
		want   []string // "key#n": the n-th job of key
	}{
		{"one requester keeps its order", []string{"a", "a", "a"}, []string{"a#0", "a#1", "a#2"}},
		{"a flood then another's one job: the other goes second", []string{"f", "f", "f", "f", "l"}, []string{"f#0", "l#0", "f#1", "f#2", "f#3"}},
		{"three requesters alternate", []string{"a", "a", "b", "b", "c", "c"}, []string{"a#0", "b#0", "c#0", "a#1", "b#1", "c#1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newFairQueue()
			var got []string
			n := map[string]int{}
			for _, key := range tt.pushes {
				label := key + "#" + string(rune('0'+n[key]))
				n[key]++
				q.push(key, func() { got = append(got, label) })
			}
			for j, ok := q.take(); ok; j, ok = q.take() {
				j()
				q.done()
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("order %v, want %v", got, tt.want)
			}
			if len(q.byKey) != 0 {
				t.Errorf("%d requesters kept with nothing queued or waiting", len(q.byKey))
			}
		})
	}
}

// Bounds count asks admitted and not yet concluded; the first refusal of
// a burst is marked, the next are not, until the requester has none
// waiting again.
func TestFairQueueBounds(t *testing.T) {
	q := newFairQueue()
	admit := func(key string) (string, bool) { return q.admit(key, 2, 3) }
	for _, key := range []string{"a", "a", "b"} {
		if why, _ := admit(key); why != "" {
			t.Fatalf("%s refused within the bounds: %s", key, why)
		}
	}
	steps := []struct {
		key       string
		why       string
		first     bool
		concludes string // concluded before this admission
	}{
		{key: "a", why: "2 asks from this session", first: true},
		{key: "a", why: "2 asks from this session", first: false},
		{key: "c", why: "3 asks from all sessions", first: true},
		{key: "c", why: "3 asks from all sessions", first: false},
		{key: "c", concludes: "b"},
		{key: "a", why: "2 asks from this session", first: false},
		{key: "b", why: "3 asks from all sessions", first: false},
	}
	for i, s := range steps {
		if s.concludes != "" {
			q.conclude(s.concludes)
		}
		why, first := admit(s.key)
		if s.why == "" && why != "" || !strings.Contains(why, s.why) || first != s.first {
			t.Errorf("step %d (%s): %q, first %v; want %q, first %v", i, s.key, why, first, s.why, s.first)
		}
	}
	if mine, all := q.waiting("a"); mine != 2 || all != 3 {
		t.Errorf("waiting a=%d all=%d, want 2 and 3", mine, all)
	}
	// Once a has none waiting, its next refusal starts a new burst.
	q.conclude("a")
	q.conclude("a")
	q.conclude("c")
	for range 2 {
		admit("a")
	}
	if _, first := admit("a"); !first {
		t.Error("a refusal after the session had none waiting is not the first of a burst")
	}
}

// Crowded (many jobs queued while files are being read), one job is done
// at a time: the others' CPU goes to the watcher and to reading.
func TestFairQueueCrowded(t *testing.T) {
	q := newFairQueue()
	for range crowdedJobs + 2 {
		q.push("f", func() {})
	}
	q.readOne(time.Now())
	if _, ok := q.take(); !ok {
		t.Fatal("no job")
	}
	if _, ok := q.take(); ok {
		t.Error("a second job while crowded and one is being done")
	}
	q.done()
	if _, ok := q.take(); !ok {
		t.Error("no job once the one being done is")
	}
	q.done()
	// Nothing read lately: not crowded, jobs are done side by side.
	q.readOne(time.Now().Add(-time.Second))
	if _, ok := q.take(); !ok {
		t.Fatal("no job")
	}
	if _, ok := q.take(); !ok {
		t.Error("one job at a time though nothing is being read")
	}
}

// While one requester floods (heavyJobs jobs or more waiting), the jobs of
// the others are taken first (takeLight), and only the flooding one's
// next files are read ahead, within the bytes allowed.
func TestFairQueueLightFirstAndReadAhead(t *testing.T) {
	q := newFairQueue()
	var got []string
	push := func(key string) { q.push(key, func() { got = append(got, key) }) }
	for range heavyJobs - 1 {
		push("f")
	}
	push("l")
	if _, ok := q.takeLight(); ok {
		t.Fatal("takeLight took a job while nobody floods")
	}
	if q.readAhead("f", 100) {
		t.Fatal("read ahead for a requester that does not flood")
	}
	push("f") // now heavyJobs of f wait
	if !q.readAhead("f", 100) || q.readAhead("l", 100) || q.readAhead("f", maxAheadBytes) {
		t.Fatal("read ahead: want f within the bytes allowed, not l, not past the bytes allowed")
	}
	q.aheadDone(100)
	j, ok := q.takeLight()
	if !ok {
		t.Fatal("takeLight took nothing while f floods and l waits")
	}
	j()
	q.done()
	if _, ok := q.takeLight(); ok {
		t.Fatal("takeLight took a flooding requester's job")
	}
	for j, ok := q.take(); ok; j, ok = q.take() {
		j()
		q.done()
	}
	if len(got) != heavyJobs+1 || got[0] != "l" || q.heavy != 0 || q.ahead != 0 {
		t.Errorf("order %v, heavy %d, ahead %d; want l first, then f's, none heavy, no bytes ahead", got, q.heavy, q.ahead)
	}
}

// Files of largeRead bytes or more are read ahead within maxAheadLarge,
// the rest within maxAheadBytes: a flood of large files keeps a few
// megabytes waiting, not 32 (0014's second amendment), while a flood of
// small files is read ahead as far as before.
func TestFairQueueReadsLargeFilesAheadWithinTheirBound(t *testing.T) {
	const mib = 1 << 20
	q := newFairQueue()
	for range heavyJobs {
		q.push("f", func() {})
	}
	steps := []struct {
		n    int
		want bool
	}{
		{mib, true}, {mib, true}, {mib, true}, {mib, true},
		{mib, false},           // past maxAheadLarge
		{largeRead, false},     // the least a large file is
		{largeRead - 1, true},  // small: within maxAheadBytes
		{maxAheadBytes, false}, // past maxAheadBytes
	}
	for i, s := range steps {
		if got := q.readAhead("f", s.n); got != s.want {
			t.Fatalf("step %d: readAhead of %d bytes = %v, want %v (ahead %d, of which large %d)", i, s.n, got, s.want, q.ahead, q.aheadLarge)
		}
	}
	q.aheadDone(mib)
	if !q.readAhead("f", mib) {
		t.Fatal("a large file given back left no room for another")
	}
	for range maxAheadLarge / mib {
		q.aheadDone(mib)
	}
	q.aheadDone(largeRead - 1)
	if q.ahead != 0 || q.aheadLarge != 0 {
		t.Errorf("ahead %d, of which large %d, once all are given back; want 0", q.ahead, q.aheadLarge)
	}
}

// Past the bounds on what is kept ahead, a flooding requester's files
// wait by name, up to againMax of them; those do not count toward
// jobsMax, past which a file read is answered by its reader (pushRead).
func TestFairQueueWaitsByNameWithinItsBound(t *testing.T) {
	q := newFairQueue()
	q.againMax, q.jobsMax = 2, heavyJobs+2
	for range heavyJobs {
		q.push("f", func() {})
	}
	q.push("l", func() {})
	if q.readAgainLater("l") || q.readAgainLater("nobody") {
		t.Fatal("a requester that does not flood waits by name")
	}
	for i := range 2 {
		if !q.readAgainLater("f") {
			t.Fatalf("file %d of the flood did not wait by name within the bound", i)
		}
		q.push("f", func() {})
	}
	if q.readAgainLater("f") {
		t.Fatal("a file waited by name past againMax")
	}
	if !q.pushRead("m", func() {}) {
		t.Fatal("the files waiting by name counted toward jobsMax")
	}
	if q.pushRead("m", func() {}) {
		t.Fatal("a job queued past jobsMax")
	}
	q.againDone()
	if !q.readAgainLater("f") {
		t.Fatal("a file that had its turn left no room for another")
	}
}
