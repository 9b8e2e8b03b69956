package serve

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

// A flood past the bounds on reading ahead (0020) stalls nobody: the
// flood's asks are held at a Holder terminal (a tty) up to the bound per
// requester and the rest refused; its backlog passes the bounds on bytes
// and jobs read ahead, so that part of it is read ahead (its intake a job
// in its turn) and the rest read whole at 0014's pace. Another
// requester's ask, read behind all of it, is answered within a deadline:
// by the rules, or by the operator at the terminal (its conclusion is
// queued behind the flood's turns). Then every flood request is answered
// or held, the ahead-read bytes are all given back and nothing is queued:
// no job was left unrun, no name read and never queued or released.
func TestFloodPastTheReadAheadBoundsStallsNobody(t *testing.T) {
	const (
		backlog  = 1500
		heldMax  = 4
		deadline = 20 * time.Second
	)
	tests := []struct {
		name    string
		workers int
		// legitValue is the other requester's ask: allowed by the rules,
		// or held at the terminal until the test answers it.
		legitValue string
		// withdraw removes every flood request once the broker runs:
		// each child gave up while its turn, read ahead, waited.
		withdraw bool
		// more is how many flood requests a writer adds while the
		// broker reads the backlog.
		more int
		// again bounds the flood's files waiting by name (0036); 0 is
		// the default, far above the backlog.
		again int
	}{
		{"rule ask, one worker", 1, "git status --short", false, 0, 0},
		{"rule ask, four workers", 4, "git status --short", false, 0, 0},
		{"held ask answered at the terminal, one worker", 1, "make deploy", false, 0, 0},
		{"held ask answered at the terminal, four workers", 4, "make deploy", false, 0, 0},
		{"rule ask, the flood withdrawn while its turns wait", 1, "git status --short", true, 0, 0},
		{"rule ask, the flood still writing", 2, "git status --short", false, 1500, 0},
		{"rule ask, past every bound, files waiting by name included", 2, "git status --short", false, 0, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout := mailbox.Layout{Root: t.TempDir()}
			var flood []string
			for i := range backlog {
				id := fmt.Sprintf("flood-%05d", i)
				dropFrom(t, layout, id, "flooder", "make deploy")
				flood = append(flood, id)
			}
			// Sorted after the flood: the watcher's first scan hands it
			// out last, behind the whole backlog.
			legit := dropFrom(t, layout, "legit", "legit", tt.legitValue)
			term := newQueueTerminal()
			start := time.Now()
			f := newFixtureWith(t, layout, term, func(b *Broker) {
				b.Workers = tt.workers
				b.MaxPendingPerRequester = heldMax
				// About 100 flood files of bytes, 200 jobs: reached
				// within the first few hundred files of the backlog.
				b.aheadBytes, b.aheadJobs, b.aheadAgain = 64<<10, 200, tt.again
			})
			// The flood's first ask held: the broker runs, and its
			// fair queue is made (prepare) before this goroutine looks.
			select {
			case <-term.asked:
			case <-time.After(deadline):
				t.Fatal("no flood ask reached the terminal")
			}
			bounds := watchBounds(t, f.broker)

			var writer sync.WaitGroup
			var answered atomic.Bool
			if tt.more > 0 {
				more := make([][]byte, tt.more)
				for i := range more {
					data, err := wire.EncodeRequest(request(t, fmt.Sprintf("more-%05d", i), "flooder", "make deploy"))
					if err != nil {
						t.Fatal(err)
					}
					more[i] = data
				}
				dir, _ := layout.RequestsDir("parent")
				writer.Go(func() {
					for i, data := range more {
						if answered.Load() {
							return
						}
						path := fmt.Sprintf("%s/more-%05d.json", dir, i)
						if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
							t.Error(err)
							return
						}
						if err := os.Rename(path+".tmp", path); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			if tt.withdraw {
				// Once part of the flood is read ahead and the rest
				// waits past the bounds.
				bounds.wait(t, start.Add(deadline))
				dir, _ := layout.RequestsDir("parent")
				for _, id := range flood {
					os.Remove(fmt.Sprintf("%s/%s.json", dir, id))
				}
			}

			if tt.legitValue == "make deploy" {
				waitHeld(t, term, legit.ID, start.Add(deadline))
				term.answer(t, legit.ID, decision.Allow(provenance.User{Via: provenance.ViaDialog}), 1)
			}
			resp := waitResponse(t, layout, legit, start.Add(deadline))
			floodLeft := countInbox(t, layout, "flood-")
			answered.Store(true)
			writer.Wait()
			t.Logf("the other requester's ask was answered after %s (bounds reached: %v)", time.Since(start).Round(time.Millisecond), bounds.reached())
			if !resp.Approved {
				t.Errorf("the other requester's ask: %+v, want allowed", resp)
			}
			// Past the bounds on what is kept ahead the flood's files
			// wait by name: reading goes on, and the other's ask is
			// answered before most of the flood (before 0036 kept them
			// by name, at most the jobs bound of the flood was left by
			// then: the reader answered the rest as it read them).
			if tt.again == 0 && !tt.withdraw && floodLeft < backlog/2 {
				t.Errorf("%d of the flood's %d requests left when the other's ask was answered: the flood was answered first", floodLeft, backlog)
			}

			// The flood: heldMax asks held, the rest answered, none
			// left in the inbox unanswered (or, withdrawn, none left).
			left := heldMax
			if tt.withdraw {
				left = 0
			}
			waitInbox(t, layout, left, start.Add(2*deadline))
			t.Logf("the flood answered or held after %s", time.Since(start).Round(time.Millisecond))
			if !bounds.reached() {
				t.Error("the bounds on reading ahead were never reached: the test does not test them")
			}
			q := f.broker.fair
			q.mu.Lock()
			peak := q.peak
			q.mu.Unlock()
			// Past the bound a reader answers what it read at once; only
			// the conclusions of the asks admitted are queued beyond it,
			// and the files waiting by name, which peak does not count.
			if most := q.jobsMax + 2*heldMax; peak > most {
				t.Errorf("%d jobs waited at once, want at most %d: what waits grows with the flood", peak, most)
			}
			pollUntil(t, start.Add(2*deadline), "no job queued, no byte kept ahead", func() bool {
				q.mu.Lock()
				defer q.mu.Unlock()
				return q.queued == 0 && q.running == 0 && q.ahead == 0 && q.heavy == 0 && q.again == 0
			})
			f.stop()
		})
	}
}

// boundsWatch notes whether a broker's fair queue reached a bound on
// reading ahead: a sample every millisecond, since a flood's backlog past
// a bound stays past it for many reads.
type boundsWatch struct {
	hit chan struct{} // closed once a bound is reached
}

func watchBounds(t *testing.T, b *Broker) *boundsWatch {
	w := &boundsWatch{hit: make(chan struct{})}
	stop := make(chan struct{})
	var done sync.WaitGroup
	t.Cleanup(func() { close(stop); done.Wait() })
	done.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			q := b.fair
			q.mu.Lock()
			hit := q.jobsKept() >= q.jobsMax || q.ahead+1024 > q.aheadMax
			q.mu.Unlock()
			if hit {
				close(w.hit)
				return
			}
		}
	})
	return w
}

func (w *boundsWatch) reached() bool {
	select {
	case <-w.hit:
		return true
	default:
		return false
	}
}

// wait waits until by for a bound to be reached.
func (w *boundsWatch) wait(t *testing.T, by time.Time) {
	t.Helper()
	select {
	case <-w.hit:
	case <-time.After(time.Until(by)):
		t.Fatal("the bounds on reading ahead were never reached")
	}
}

// waitHeld waits until the ask id reaches the terminal, the asks held
// before it included, until by.
func waitHeld(t *testing.T, q *queueTerminal, id string, by time.Time) {
	t.Helper()
	timeout := time.After(time.Until(by))
	for {
		select {
		case got := <-q.asked:
			if got == id {
				return
			}
		case <-timeout:
			t.Fatalf("ask %s did not reach the terminal in time: a stall", id)
		}
	}
}

// waitResponse waits until by for the response to req.
func waitResponse(t *testing.T, layout mailbox.Layout, req wire.Request, by time.Time) wire.Response {
	t.Helper()
	path, _ := layout.ResponsePath("parent", req.ID)
	var resp wire.Response
	pollUntil(t, by, "the response to "+req.ID+" (a stall)", func() bool {
		data, err := mailbox.ReadFile(path)
		if err != nil {
			return false
		}
		if resp, _, err = wire.DecodeResponse(data); err != nil {
			t.Fatal(err)
		}
		return true
	})
	return resp
}

// countInbox is how many request files whose names start with prefix
// the inbox holds.
func countInbox(t *testing.T, layout mailbox.Layout, prefix string) int {
	t.Helper()
	dir, _ := layout.RequestsDir("parent")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if mailbox.IsMailName(e.Name()) && strings.HasPrefix(e.Name(), prefix) {
			n++
		}
	}
	return n
}

// waitInbox waits until by for the inbox to hold n request files.
func waitInbox(t *testing.T, layout mailbox.Layout, n int, by time.Time) {
	t.Helper()
	dir, _ := layout.RequestsDir("parent")
	have := -1
	pollUntil(t, by, fmt.Sprintf("%d request files left in the inbox", n), func() bool {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		have = 0
		for _, e := range entries {
			if mailbox.IsMailName(e.Name()) {
				have++
			}
		}
		return have == n
	})
}

// pollUntil polls cond until it holds or by passes.
func pollUntil(t *testing.T, by time.Time, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if time.Now().After(by) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A flood's file waiting by name whose child gave up (the file gone at
// its turn) is handed back to the watcher: a request written later
// under the same name is delivered and answered. Without the release the
// watcher kept the name as in flight for the broker's life, and the later
// request was never answered.
func TestAFileGoneWhileItWaitedByNameFreesItsName(t *testing.T) {
	const backlog = byNameBacklog
	start := time.Now()
	f, term, hold := floodWaitingByName(t, backlog, start.Add(byNameDeadline))
	layout := f.layout
	dir, _ := layout.RequestsDir("parent")
	for i := range backlog {
		os.Remove(fmt.Sprintf("%s/flood-%05d.json", dir, i))
	}
	hold.release()
	waitNoneByName(t, f.broker.fair, start.Add(byNameDeadline))
	// The held asks' files went too: once a sweep has withdrawn them, a
	// new ask is admitted and reaches the terminal, so it was delivered.
	// Dropped before that sweep, it would be refused at the bound.
	pollUntil(t, start.Add(byNameDeadline), "the held asks withdrawn", func() bool {
		_, all := f.broker.fair.waiting("")
		return all == 0
	})
	again := dropFrom(t, layout, fmt.Sprintf("flood-%05d", backlog-1), "flooder", "make deploy")
	waitHeld(t, term, again.ID, start.Add(2*byNameDeadline))
}

// A flooder swaps a file waiting by name, before its turn, for a symlink
// to a request it could not write there (outside the root, asking what
// the rules allow) and for a rewrite claiming what the rules allow. The
// symlink is refused when the file is read again, as at its first read:
// no answer. The rewrite is decided on what it now says, in its own
// requester's turn: the swap gains nothing a new request would not.
func TestAFileSwappedWhileItWaitedByNameIsReadAsAnyFile(t *testing.T) {
	const backlog, deadline = byNameBacklog, byNameDeadline
	start := time.Now()
	f, _, hold := floodWaitingByName(t, backlog, start.Add(deadline))
	layout := f.layout
	// The last two wait by name, their turns held.
	dir, _ := layout.RequestsDir("parent")
	linked := fmt.Sprintf("flood-%05d", backlog-1)
	outside := filepath.Join(t.TempDir(), "outside.json")
	data, err := wire.EncodeRequest(request(t, linked, "flooder", "git status --short"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, linked+".json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, linked+".json")); err != nil {
		t.Fatal(err)
	}
	rewritten := dropFrom(t, layout, fmt.Sprintf("flood-%05d", backlog-2), "flooder", "git status --short")
	hold.release()

	resp := waitResponse(t, layout, rewritten, start.Add(2*deadline))
	if !resp.Approved {
		t.Errorf("the rewritten request: %+v, want its rule's allow, as a new request would get", resp)
	}
	waitNoneByName(t, f.broker.fair, start.Add(2*deadline))
	path, _ := layout.ResponsePath("parent", linked)
	if got, err := os.ReadFile(path); err == nil {
		t.Errorf("the symlinked request was answered: %s", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, linked+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the symlink is still in the inbox: %v", err)
	}
}

// byNameBacklog and byNameDeadline size the flood of the by-name tests
// (floodWaitingByName) and bound each of their waits.
const (
	byNameBacklog  = 600
	byNameDeadline = 20 * time.Second
)

// waitNoneByName waits until by for no file of q to wait by name: each
// was read again in its turn, or found gone.
func waitNoneByName(t *testing.T, q *fairQueue, by time.Time) {
	t.Helper()
	pollUntil(t, by, "no file waiting by name", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.again == 0
	})
}

// holdTurns makes a broker's files waiting by name wait, at their turn,
// until release is called: a test changes them meanwhile. entered is
// closed when the first turn comes.
type holdTurns struct {
	entered, released chan struct{}
	once, free        sync.Once
}

func newHoldTurns(b *Broker) *holdTurns {
	h := &holdTurns{entered: make(chan struct{}), released: make(chan struct{})}
	b.beforeAgain = func() {
		h.once.Do(func() { close(h.entered) })
		<-h.released
	}
	return h
}

func (h *holdTurns) release() { h.free.Do(func() { close(h.released) }) }

// floodWaitingByName drops backlog flood files of "flooder" and starts a
// broker on them whose files waiting by name are held at their turn, and
// waits until every worker is at such a turn and most of the flood waits
// by name.
func floodWaitingByName(t *testing.T, backlog int, deadline time.Time) (*fixture, *queueTerminal, *holdTurns) {
	t.Helper()
	layout := mailbox.Layout{Root: t.TempDir()}
	for i := range backlog {
		dropFrom(t, layout, fmt.Sprintf("flood-%05d", i), "flooder", "make deploy")
	}
	term := newQueueTerminal()
	var hold *holdTurns
	f := newFixtureWith(t, layout, term, func(b *Broker) {
		b.MaxPendingPerRequester = 4
		// No file is read ahead (each is larger than a byte): every
		// file of the flood not decided at its first read waits by
		// name, the last ones the tests change included, however the
		// reading and the first jobs interleave.
		b.aheadBytes, b.aheadJobs = 1, 200
		hold = newHoldTurns(b)
	})
	t.Cleanup(hold.release) // before the broker stops (cleanups run last first)
	select {
	case <-hold.entered:
	case <-time.After(time.Until(deadline)):
		t.Fatal("no file waiting by name had its turn")
	}
	q := f.broker.fair
	// Every worker held at a turn and every name taken from the watcher:
	// nothing is being read any more, and the flood's later files wait
	// by name (only its first, read before it was flooding, are decided
	// at their first read: a sixth to a quarter of them, as the reading
	// and the first jobs interleave on the machine).
	var last string
	pollUntil(t, deadline, "every worker at a held turn, the flood's later files waiting by name", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		last = fmt.Sprintf("%d workers at a held turn, %d files waiting by name, %d bytes read ahead, %d names not taken", q.running, q.again, q.ahead, f.broker.inboxBacklog())
		return q.running == DefaultWorkers && q.ahead == 0 && f.broker.inboxBacklog() == 0 && q.again >= backlog/2
	})
	t.Log(last)
	return f, term, hold
}
