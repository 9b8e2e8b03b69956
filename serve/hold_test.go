package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/reviewlog/reviewlogtest"
	"github.com/seed6639df8c/courier/wire"
)

// queueTerminal is a Holder that keeps its asks in a map, as the prompt
// keeps them in its queue: no goroutine per ask. The test answers them.
type queueTerminal struct {
	mu    sync.Mutex
	held  map[string]*heldAsk // by request id
	asked chan string         // request ids, as they are held
	// withdrawn hears the request id and cause of every withdrawal that
	// took an ask back.
	withdrawn chan withdrawal
	// panics makes Hold panic before it keeps the ask.
	panics bool
}

type heldAsk struct {
	ask  *Ask
	done func(decision.Decision)
}

type withdrawal struct {
	id    string
	cause error
}

func newQueueTerminal() *queueTerminal {
	return &queueTerminal{held: make(map[string]*heldAsk), asked: make(chan string, 1000), withdrawn: make(chan withdrawal, 1000)}
}

// Decide is never called: the broker holds asks through Hold.
func (q *queueTerminal) Decide(context.Context, Ask) decision.Decision {
	panic("Decide called on a Holder")
}

func (q *queueTerminal) Hold(ask *Ask, done func(decision.Decision)) func(error) {
	if q.panics {
		panic("the terminal broke")
	}
	id := ask.Request.ID
	q.mu.Lock()
	q.held[id] = &heldAsk{ask: ask, done: done}
	q.mu.Unlock()
	q.asked <- id
	return func(cause error) {
		q.mu.Lock()
		h := q.held[id]
		delete(q.held, id)
		q.mu.Unlock()
		if h != nil {
			q.withdrawn <- withdrawal{id, cause}
			h.done(decision.NobodyAnswered("withdrawn"))
		}
	}
}

// answer decides a held ask, as an operator would; twice says so twice.
func (q *queueTerminal) answer(t *testing.T, id string, d decision.Decision, times int) {
	t.Helper()
	q.mu.Lock()
	h := q.held[id]
	delete(q.held, id)
	q.mu.Unlock()
	if h == nil {
		t.Fatalf("ask %s is not held", id)
	}
	for range times {
		h.done(d)
	}
}

func (q *queueTerminal) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.held)
}

// waitAsked waits for n asks to be held and returns their ids.
func (q *queueTerminal) waitAsked(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	deadline := time.After(30 * time.Second)
	for len(ids) < n {
		select {
		case id := <-q.asked:
			ids = append(ids, id)
		case <-deadline:
			t.Fatalf("%d of %d asks reached the terminal", len(ids), n)
		}
	}
	return ids
}

func (q *queueTerminal) waitWithdrawn(t *testing.T) withdrawal {
	t.Helper()
	select {
	case w := <-q.withdrawn:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no ask was withdrawn")
		return withdrawal{}
	}
}

// drop writes a request the way a child would and returns it and its path.
func drop(t *testing.T, layout mailbox.Layout, value string, pid int) (wire.Request, string) {
	t.Helper()
	req := ask(t, value)
	req.RequesterPID = pid
	data, err := wire.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return req, writeRequest(t, layout, req.ID+".json", data)
}

// readResponse waits for the response to req and decodes it.
func readResponse(t *testing.T, layout mailbox.Layout, req wire.Request) wire.Response {
	t.Helper()
	path, _ := layout.ResponsePath("parent", req.ID)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if data, err := mailbox.ReadFile(path); err == nil {
			resp, _, err := wire.DecodeResponse(data)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		if time.Now().After(deadline) {
			t.Fatalf("no response to %s", req.ID)
		}
	}
}

func noResponse(t *testing.T, layout mailbox.Layout, req wire.Request) {
	t.Helper()
	path, _ := layout.ResponsePath("parent", req.ID)
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("%s was answered", req.ID)
	}
}

// waitSettled waits until no request is in flight any more.
func (f *fixture) waitSettled(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		f.broker.mu.Lock()
		n := len(f.broker.inflight)
		f.broker.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests still in flight", n)
		}
	}
}

// liveProcess starts a process that lives until the test kills it.
func liveProcess(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a child process: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// A terminal that holds asks costs the broker no goroutine per held ask,
// and each way a held ask can end reaches it once.
func TestHeldAsksEnd(t *testing.T) {
	user := provenance.User{Via: provenance.ViaDialog}
	tests := []struct {
		name          string
		promptTimeout time.Duration
		// panics makes the terminal's Hold panic.
		panics bool
		// run drops the ask and ends it; it returns the request and a check
		// of what the child reads (nil: no response at all).
		run func(t *testing.T, f *fixture, q *queueTerminal) (wire.Request, func(wire.Response) error)
	}{
		{"answered", 0, false, func(t *testing.T, f *fixture, q *queueTerminal) (wire.Request, func(wire.Response) error) {
			req, _ := drop(t, f.layout, "make deploy", 0)
			q.answer(t, q.waitAsked(t, 1)[0], decision.Allow(user), 1)
			return req, approved(true)
		}},
		{"answered twice", 0, false, func(t *testing.T, f *fixture, q *queueTerminal) (wire.Request, func(wire.Response) error) {
			req, _ := drop(t, f.layout, "make deploy", 0)
			// The first answer counts; the second neither answers again
			// nor upsets the broker's count of escalations.
			q.answer(t, q.waitAsked(t, 1)[0], decision.Deny("", user), 2)
			return req, approved(false)
		}},
		{"the child removes its request", 0, false, func(t *testing.T, f *fixture, q *queueTerminal) (wire.Request, func(wire.Response) error) {
			req, path := drop(t, f.layout, "make deploy", 0)
			q.waitAsked(t, 1)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if w := q.waitWithdrawn(t); w.id != req.ID || !errors.Is(w.cause, errRequesterGone) {
				t.Errorf("withdrawn %s because %v", w.id, w.cause)
			}
			return req, nil
		}},
		{"the child dies", 0, false, func(t *testing.T, f *fixture, q *queueTerminal) (wire.Request, func(wire.Response) error) {
			child := liveProcess(t)
			req, path := drop(t, f.layout, "make deploy", child.Process.Pid)
			q.waitAsked(t, 1)
			child.Process.Kill()
			child.Wait()
			if w := q.waitWithdrawn(t); w.id != req.ID || !strings.Contains(w.cause.Error(), "is gone") {
				t.Errorf("withdrawn %s because %v", w.id, w.cause)
			}
			waitGone(t, path)
			return req, nil
		}},
		{"the prompt times out", 50 * time.Millisecond, false, func(t *testing.T, f *fixture, q *queueTerminal) (wire.Request, func(wire.Response) error) {
			req, _ := drop(t, f.layout, "make deploy", 0)
			q.waitAsked(t, 1)
			if w := q.waitWithdrawn(t); !errors.Is(w.cause, errPromptTimeout) {
				t.Errorf("withdrawn because %v", w.cause)
			}
			return req, unavailable("Nobody answered the prompt within 50ms")
		}},
		{"the session ends", 0, false, func(t *testing.T, f *fixture, q *queueTerminal) (wire.Request, func(wire.Response) error) {
			req, _ := drop(t, f.layout, "make deploy", 0)
			q.waitAsked(t, 1)
			f.stop()
			if w := q.waitWithdrawn(t); !errors.Is(w.cause, errSessionEnded) {
				t.Errorf("withdrawn because %v", w.cause)
			}
			return req, unavailable(ReasonSessionEnded)
		}},
		{"the terminal panics", 0, true, func(t *testing.T, f *fixture, q *queueTerminal) (wire.Request, func(wire.Response) error) {
			req, _ := drop(t, f.layout, "make deploy", 0)
			return req, func(resp wire.Response) error {
				if g, ok := provenance.Effective(resp.DecidedBy).(provenance.GateError); !ok || !strings.Contains(g.Reason, "the terminal broke") {
					return errors.New("not a gate error")
				}
				return nil
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newQueueTerminal()
			q.panics = tt.panics
			f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, q, func(b *Broker) { b.PromptTimeout = tt.promptTimeout })
			req, want := tt.run(t, f, q)
			if want == nil {
				f.waitSettled(t)
				noResponse(t, f.layout, req)
			} else if err := want(readResponse(t, f.layout, req)); err != nil {
				t.Errorf("response: %v", err)
			}
			f.stop()
			if n := q.count(); n != 0 {
				t.Errorf("%d asks still held after the broker stopped", n)
			}
		})
	}
}

func approved(want bool) func(wire.Response) error {
	return func(resp wire.Response) error {
		if resp.Approved != want {
			return errors.New("approved is " + map[bool]string{true: "true", false: "false"}[resp.Approved])
		}
		return nil
	}
}

func unavailable(reason string) func(wire.Response) error {
	return func(resp wire.Response) error {
		if u, ok := provenance.Effective(resp.DecidedBy).(provenance.Unavailable); !ok || u.Reason != reason {
			return errors.New("decided by " + string(mustJSON(resp.DecidedBy)))
		}
		return nil
	}
}

func mustJSON(v any) []byte {
	data, _ := json.Marshal(v)
	return data
}

// Many held asks: no goroutine each; a sweep withdraws every ask of a
// requester that died; shutdown answers all the others "the session ended"
// and waits until it has.
func TestManyHeldAsks(t *testing.T) {
	const n = 200
	q := newQueueTerminal()
	log, logPath := reviewlogtest.Open(t)
	// All from one requesting session, past its bound of waiting asks
	// (TestBounds): lifted here.
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, q, func(b *Broker) { b.Log, b.MaxPendingPerRequester = log, n })
	before := runtime.NumGoroutine()

	child := liveProcess(t)
	var dying, staying []wire.Request
	for i := range n {
		if i%2 == 0 {
			req, _ := drop(t, f.layout, "make deploy", child.Process.Pid)
			dying = append(dying, req)
		} else {
			req, _ := drop(t, f.layout, "make deploy", os.Getpid())
			staying = append(staying, req)
		}
	}
	q.waitAsked(t, n)
	// The escalations end once their asks are handed over.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before+20; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines with %d asks held (%d before): the broker keeps a goroutine per held ask", runtime.NumGoroutine(), n, before)
		}
	}

	child.Process.Kill()
	child.Wait()
	for range dying {
		q.waitWithdrawn(t)
	}
	for _, req := range dying {
		path, _ := f.layout.RequestPath("parent", req.ID)
		waitGone(t, path)
	}
	if got := q.count(); got != len(staying) {
		t.Fatalf("%d asks held, want %d", got, len(staying))
	}

	f.stop() // returns once every held ask is answered
	for _, req := range staying {
		if err := unavailable(ReasonSessionEnded)(readResponse(t, f.layout, req)); err != nil {
			t.Errorf("%s: %v", req.ID, err)
		}
	}
	for _, req := range dying {
		noResponse(t, f.layout, req)
	}
	events := eventCounts(t, log, logPath)
	for _, req := range dying {
		// One from the sweep, one from the ask's end; a third is the file
		// read again after its requester was found dead: the ask's end
		// released the name while the file was still there.
		if n := events[req.ID][reviewlog.ForwardedRequesterGone]; n == 0 || n > 2 {
			t.Errorf("%s: %d requester_gone entries, want 1 or 2", req.ID, n)
		}
	}
}

// The rules' answer is written before the review entry that records it;
// the entries themselves are what they were: auto_approved (or
// auto_denied), then approved (or denied), with the same fields.
func TestRuleResolvedReviewEntries(t *testing.T) {
	tests := []struct {
		value            string
		ruled, concluded string
	}{
		{"git status --short", reviewlog.ForwardedAutoApproved, reviewlog.ForwardedApproved},
		{"npm install", reviewlog.ForwardedAutoDenied, reviewlog.ForwardedDenied},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			log, logPath := reviewlogtest.Open(t)
			f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, Headless{}, func(b *Broker) { b.Log = log })
			req := ask(t, tt.value)
			f.client().Forward(t.Context(), req)
			f.stop()
			var events []string
			var ruled map[string]any
			for _, e := range readLog(t, logPath) {
				if e["requestId"] != req.ID {
					continue
				}
				events = append(events, e["event"].(string))
				if e["event"] == tt.ruled {
					ruled = e
				}
			}
			if want := []string{tt.ruled, tt.concluded}; strings.Join(events, " ") != strings.Join(want, " ") {
				t.Fatalf("events %v, want %v", events, want)
			}
			path, _ := f.layout.RequestPath("parent", req.ID)
			for key, want := range map[string]any{
				"source": "primary", "requesterAgentName": "Explore", "requesterSessionId": "child",
				"targetSessionId": "parent", "requestPath": path,
			} {
				if ruled[key] != want {
					t.Errorf("%s: %s = %v, want %v", tt.ruled, key, ruled[key], want)
				}
			}
			if by, ok := ruled["decidedBy"].(map[string]any); !ok || by["kind"] != "rule" {
				t.Errorf("%s: decidedBy = %v", tt.ruled, ruled["decidedBy"])
			}
		})
	}
}

// eventCounts syncs log and counts its entries at path by request id,
// then by event.
func eventCounts(t *testing.T, log *reviewlog.Log, path string) map[string]map[string]int {
	t.Helper()
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	counts := map[string]map[string]int{}
	for _, e := range readLog(t, path) {
		id, _ := e["requestId"].(string)
		if counts[id] == nil {
			counts[id] = map[string]int{}
		}
		counts[id][e["event"].(string)]++
	}
	return counts
}

func readLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var entries []map[string]any
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		entries = append(entries, e)
	}
	return entries
}

// stackTerminal is a Holder that records, for each ask, what started the
// goroutine Hold was called on.
type stackTerminal struct {
	forgetfulHolder
	mu      sync.Mutex
	creator []string
}

func (s *stackTerminal) Hold(ask *Ask, done func(decision.Decision)) func(error) {
	buf := make([]byte, 64<<10)
	buf = buf[:runtime.Stack(buf, false)]
	_, creator, _ := strings.Cut(string(buf), "\ncreated by ")
	creator, _, _ = strings.Cut(creator, "\n")
	s.mu.Lock()
	s.creator = append(s.creator, creator)
	s.mu.Unlock()
	return s.forgetfulHolder.Hold(ask, done)
}

// 10,000 asks held at the prompt started a goroutine each, up to 1,191 at
// once with 11 MB of stacks, which the process kept after they ended.
// Without a chain an ask is handed to a Holder by the worker that read
// it; with one (a link may take its time) it still gets a goroutine.
func TestHoldWithoutAChainStartsNoGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chain     Chain
		ownThread bool
	}{
		{"no chain", nil, false},
		{"a chain", deferringChain{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &stackTerminal{forgetfulHolder: forgetfulHolder{heldOne: make(chan struct{}, 1)}}
			f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, h, func(b *Broker) { b.Chain = tc.chain })
			drop(t, f.layout, "make deploy", 0)
			select {
			case <-h.heldOne:
			case <-time.After(10 * time.Second):
				t.Fatal("the ask never reached the terminal")
			}
			f.stop()
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.creator) != 1 {
				t.Fatalf("Hold called %d times, want 1", len(h.creator))
			}
			ownThread := strings.Contains(h.creator[0], "escalateJob")
			if ownThread != tc.ownThread {
				t.Errorf("Hold ran on a goroutine created by %s: a goroutine of its own is %v, want %v", h.creator[0], ownThread, tc.ownThread)
			}
		})
	}
}

// deferringChain defers every ask at once.
type deferringChain struct{}

func (deferringChain) Resolve(context.Context, wire.Request) (decision.Decision, bool) {
	return decision.Decision{}, false
}

// An ask its operator answers while the sweep removes the file of its
// requester, found dead, is logged as answered only: the sweep ends, and
// logs as abandoned, only the asks still in flight when it takes them up
// again.
func TestAnAskAnsweredAsItsRequesterDiesIsNotLoggedGone(t *testing.T) {
	q := newQueueTerminal()
	log, logPath := reviewlogtest.Open(t)
	var once sync.Once
	var f *fixture
	answered := make(chan struct{})
	f = newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, q, func(b *Broker) {
		b.Log = log
		b.afterDeadRemoved = func() {
			once.Do(func() {
				defer close(answered)
				q.answer(t, q.waitAsked(t, 1)[0], decision.Allow(provenance.User{Via: provenance.ViaDialog}), 1)
				// Settled: the answer is written and the request is no
				// longer in flight.
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
					b.mu.Lock()
					n := len(b.inflight)
					b.mu.Unlock()
					if n == 0 {
						return
					}
					if time.Now().After(deadline) {
						t.Error("the answered ask is still in flight")
						return
					}
				}
			})
		}
	})
	child := liveProcess(t)
	req, _ := drop(t, f.layout, "make deploy", child.Process.Pid)
	select {
	case id := <-q.asked:
		q.asked <- id // for the hook
	case <-time.After(10 * time.Second):
		t.Fatal("the ask never reached the terminal")
	}
	child.Process.Kill()
	child.Wait()
	select {
	case <-answered:
	case <-time.After(20 * time.Second):
		t.Fatal("the sweep never found the requester dead")
	}
	f.stop()
	events := eventCounts(t, log, logPath)[req.ID]
	if events[reviewlog.ForwardedApproved] != 1 {
		t.Errorf("%d approved entries, want 1 (%v)", events[reviewlog.ForwardedApproved], events)
	}
	if n := events[reviewlog.ForwardedRequesterGone]; n != 0 {
		t.Errorf("%d requester_gone entries for an ask answered before the sweep ended it (%v)", n, events)
	}
}
