package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

const testConfig = `{"permission": {"*": "ask", "bash": {
	"*": "ask",
	"git status *": "allow",
	"npm *": {"action": "deny", "reason": "Use pnpm instead"}
}}}`

// heldTerminal hands every ask to the test and waits for its answer.
type heldTerminal struct {
	asked  chan Ask
	answer chan decision.Decision
	count  atomic.Int32
}

func newHeldTerminal() *heldTerminal {
	return &heldTerminal{asked: make(chan Ask, 16), answer: make(chan decision.Decision, 16)}
}

func (h *heldTerminal) Decide(ctx context.Context, a Ask) decision.Decision {
	h.count.Add(1)
	h.asked <- a
	select {
	case d := <-h.answer:
		return d
	case <-ctx.Done():
		return decision.NobodyAnswered("the terminal was told to stop")
	}
}

type fixture struct {
	t       *testing.T
	layout  mailbox.Layout
	broker  *Broker
	cancel  context.CancelFunc
	done    chan error
	journal *grants.Journal
}

func newFixture(t *testing.T, term Terminal) *fixture {
	t.Helper()
	layout := mailbox.Layout{Root: t.TempDir()}
	return newFixtureAt(t, layout, term)
}

func newFixtureAt(t *testing.T, layout mailbox.Layout, term Terminal) *fixture {
	t.Helper()
	return newFixtureWith(t, layout, term, nil)
}

// newFixtureWith lets a test set Broker fields before Run starts.
func newFixtureWith(t *testing.T, layout mailbox.Layout, term Terminal, configure func(*Broker)) *fixture {
	t.Helper()
	cfg, err := rules.Parse("test.json", []byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{layout.Root}})
	if err != nil {
		t.Fatal(err)
	}
	journal, err := grants.Open(layout, grants.Broker, "parent")
	if err != nil {
		t.Fatal(err)
	}
	if err := journal.Load(policy.Sessions()); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, layout: layout, journal: journal, done: make(chan error, 1)}
	f.broker = &Broker{
		Layout: layout, Session: "parent", Policy: policy, Terminal: term, Journal: journal,
		SweepInterval: 20 * time.Millisecond,
		OnError:       func(err error) { t.Logf("broker: %v", err) },
	}
	if configure != nil {
		configure(f.broker)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() { f.done <- f.broker.Run(ctx) }()
	t.Cleanup(f.stop)
	return f
}

func (f *fixture) stop() {
	f.cancel()
	select {
	case err := <-f.done:
		if err != nil {
			f.t.Errorf("Run: %v", err)
		}
		f.done <- nil // a second stop returns at once
	case <-time.After(10 * time.Second):
		f.t.Fatal("the broker did not stop within 10s")
	}
}

func (f *fixture) client() *forward.Client {
	return &forward.Client{Layout: f.layout, Timeout: 30 * time.Second}
}

func ask(t *testing.T, value string) wire.Request {
	t.Helper()
	id, _ := forward.NewRequestID()
	req, err := forward.Ask{Session: "child", Agent: "Explore", Surface: "bash", Value: value, Cwd: "/w"}.Request(id, "parent", time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// writeRequest drops a request file the way any child would.
func writeRequest(t *testing.T, layout mailbox.Layout, name string, data []byte) string {
	t.Helper()
	return writeRequestTo(t, layout, "parent", name, data)
}

func writeRequestTo(t *testing.T, layout mailbox.Layout, session, name string, data []byte) string {
	t.Helper()
	if err := layout.EnsureInbox(session); err != nil {
		t.Fatal(err)
	}
	dir, _ := layout.RequestsDir(session)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path+".tmp", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitGone waits, on the watcher's own events, for path to disappear.
func waitGone(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there after 10s", path)
		}
		time.Sleep(5 * time.Millisecond) // polling the test's own condition, not a sleep-for-a-result
	}
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

func TestRuleResolvedAnswers(t *testing.T) {
	f := newFixture(t, Headless{})
	c := f.client()
	d := c.Forward(t.Context(), ask(t, "git status --short"))
	wantAllow := provenance.Forwarded{ResponderSessionID: provenance.Str("parent"), Decision: provenance.Rule{Surface: "bash", Pattern: provenance.Str("git status *"), Origin: provenance.Str("global")}}
	if !d.Approved() || !reflect.DeepEqual(d.DecidedBy, wantAllow) {
		t.Errorf("allow: %+v (decidedBy %#v)", d, d.DecidedBy)
	}
	d = c.Forward(t.Context(), ask(t, "npm install"))
	if d.Approved() || d.State != decision.StateDeniedWithReason || d.DenialReason != "Use pnpm instead" {
		t.Errorf("deny: %+v", d)
	}
	if a, ok := provenance.Effective(d.DecidedBy).(provenance.Rule); !ok || *a.Pattern != "npm *" {
		t.Errorf("deny decider: %#v", d.DecidedBy)
	}
}

func TestAskWithoutAnyoneIsUnavailable(t *testing.T) {
	f := newFixture(t, Headless{})
	d := f.client().Forward(t.Context(), ask(t, "make deploy"))
	if d.Approved() || !d.Unavailable() || d.DenialReason != ReasonNoHuman {
		t.Errorf("decision: %+v", d)
	}
	// An old child's request without accessIntent floors to the terminal.
	req := ask(t, "git status")
	req.AccessIntent = nil
	if d := f.client().Forward(t.Context(), req); !d.Unavailable() {
		t.Errorf("no intent: %+v", d)
	}
}

// A human deliberating must never delay rule-resolved answers.
func TestRulesAnswerWhileTheTerminalIsHeld(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	held := make(chan decision.Decision, 1)
	go func() { held <- f.client().Forward(t.Context(), ask(t, "make deploy")) }()
	<-term.asked // the terminal now holds one ask

	const n = 200
	var wg sync.WaitGroup
	var approved atomic.Int32
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if d := f.client().Forward(t.Context(), ask(t, "git status")); d.Approved() {
				approved.Add(1)
			}
		}()
	}
	wg.Wait()
	if approved.Load() != n {
		t.Errorf("%d of %d rule-resolved asks approved while the terminal was held", approved.Load(), n)
	}
	select {
	case d := <-held:
		t.Fatalf("the held ask finished early: %+v", d)
	default:
	}
	term.answer <- decision.Allow(provenance.User{Via: provenance.ViaDialog})
	if d := <-held; !d.Approved() {
		t.Errorf("held ask: %+v", d)
	}
}

func TestShutdownAnswersPendingAsSessionEnded(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	result := make(chan decision.Decision, 1)
	go func() { result <- f.client().Forward(t.Context(), ask(t, "make deploy")) }()
	<-term.asked
	f.stop()
	d := <-result
	if !d.Unavailable() || provenance.Effective(d.DecidedBy) != (provenance.Unavailable{Reason: ReasonSessionEnded}) {
		t.Errorf("pending ask at shutdown: %+v", d)
	}
	hb, _ := f.layout.HeartbeatPath("parent")
	if _, err := os.Lstat(hb); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("heartbeat not withdrawn: %v", err)
	}
}

func TestBeat(t *testing.T) {
	t0 := time.Unix(0, 0)
	tests := []struct {
		name             string
		sweep, heartbeat time.Duration   // in ms
		ticks            []time.Duration // in ms from t0
		want             string          // per tick: h, s, hs or -
	}{
		{"together", 1000, 1000, []time.Duration{1000, 2001, 2999, 4000}, "hs hs hs hs"},
		{"fast sweeps", 20, 100, []time.Duration{20, 40, 60, 80, 100, 120}, "s s s s hs s"},
		{"dropped ticks", 20, 100, []time.Duration{20, 140, 160}, "s hs s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unit := time.Millisecond
			b := newBeat(t0, tt.sweep*unit, tt.heartbeat*unit)
			var got []string
			for _, at := range tt.ticks {
				h, s := b.due(t0.Add(at * unit))
				switch {
				case h && s:
					got = append(got, "hs")
				case h:
					got = append(got, "h")
				case s:
					got = append(got, "s")
				default:
					got = append(got, "-")
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("got %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
}
