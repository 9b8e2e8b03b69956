package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
	term.answer <- decision.Allow(provenance.User{Via: provenance.ViaTerminal})
	if d := <-held; !d.Approved() {
		t.Errorf("held ask: %+v", d)
	}
}

func TestWholeSessionGrantIsRecordedJournaledAndReused(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	first := make(chan decision.Decision, 1)
	go func() { first <- f.client().Forward(t.Context(), ask(t, "make deploy")) }()
	a := <-term.asked
	if a.Request.SessionApproval == nil {
		t.Fatal("the ask carries no grant suggestion")
	}
	by := provenance.User{Via: provenance.ViaTerminal}
	term.answer <- decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: by}
	d := <-first
	// On the wire it is plain approved, decider unchanged.
	if d.State != decision.StateApproved || !reflect.DeepEqual(provenance.Effective(d.DecidedBy), by) {
		t.Fatalf("first: %+v", d)
	}
	// The second identical ask is answered by the session rule, no prompt.
	d = f.client().Forward(t.Context(), ask(t, "make deploy"))
	if _, ok := provenance.Effective(d.DecidedBy).(provenance.SessionApproval); !ok || !d.Approved() {
		t.Fatalf("second: %+v (%#v)", d, d.DecidedBy)
	}
	if got := term.count.Load(); got != 1 {
		t.Errorf("terminal asked %d times, want 1", got)
	}

	// A restart of the same session reloads the grant from the journal.
	f.stop()
	g := newFixtureAt(t, f.layout, newHeldTerminal())
	d = g.client().Forward(t.Context(), ask(t, "make deploy"))
	if _, ok := provenance.Effective(d.DecidedBy).(provenance.SessionApproval); !ok || !d.Approved() {
		t.Fatalf("after restart: %+v (%#v)", d, d.DecidedBy)
	}
}

func TestApprovedForThisSubagentPassesThrough(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	result := make(chan decision.Decision, 1)
	go func() { result <- f.client().Forward(t.Context(), ask(t, "make deploy")) }()
	<-term.asked
	term.answer <- decision.Decision{State: decision.StateApprovedForSession, DecidedBy: provenance.User{Via: provenance.ViaTerminal}, SessionGrantWidth: wire.GrantFamily}
	d := <-result
	if d.State != decision.StateApprovedForSession || d.SessionGrantWidth != wire.GrantFamily {
		t.Fatalf("decision: %+v", d)
	}
	if f.broker.Policy.Sessions().Len() != 0 {
		t.Error("a subagent-only grant was recorded by the broker")
	}
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

func TestBadFilesAreRemovedAndServingGoesOn(t *testing.T) {
	f := newFixture(t, Headless{})
	req := ask(t, "git status")
	good, _ := wire.EncodeRequest(req)
	other := req
	other.ID = "perm-other-target"
	other.TargetSessionID = "someone-else"
	otherData, _ := wire.EncodeRequest(other)
	bad := []string{
		writeRequest(t, f.layout, "perm-garbage.json", []byte(`{"id":`)),
		writeRequest(t, f.layout, "perm-mismatch.json", good), // the id inside is not perm-mismatch
		writeRequest(t, f.layout, "perm-other-target.json", otherData),
	}
	dir, _ := f.layout.RequestsDir("parent")
	link := filepath.Join(dir, "perm-link.json")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	bad = append(bad, link)
	for _, p := range bad {
		waitGone(t, p)
	}
	if d := f.client().Forward(t.Context(), ask(t, "git status")); !d.Approved() {
		t.Errorf("a good request after bad ones: %+v", d)
	}
	for _, p := range bad {
		resp := filepath.Join(filepath.Dir(filepath.Dir(p)), "responses", filepath.Base(p))
		if _, err := os.Lstat(resp); err == nil {
			t.Errorf("%s was answered", p)
		}
	}
}

func TestExistingResponseIsNotAnsweredAgain(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	req := ask(t, "git status")
	if err := layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	// A broker answered and died before removing the request: its answer
	// is bound to these very request bytes.
	reqData, _ := wire.EncodeRequest(req)
	earlier := decision.Deny("earlier answer", provenance.User{Via: provenance.ViaTerminal}).Response("parent", 1).Bind(req.ID, wire.RequestDigest(reqData))
	data, _ := wire.EncodeResponse(earlier)
	if err := layout.WriteResponse("parent", req.ID, data); err != nil {
		t.Fatal(err)
	}
	path := writeRequest(t, layout, req.ID+".json", reqData)
	newFixtureAt(t, layout, Headless{})
	waitGone(t, path)
	respPath, _ := layout.ResponsePath("parent", req.ID)
	got, err := os.ReadFile(respPath)
	if err != nil || string(got) != string(data) {
		t.Errorf("the earlier response was replaced: %s (%v)", got, err)
	}
}

func TestDeadRequesterIsNeverPrompted(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	req := ask(t, "make deploy")
	req.RequesterPID = deadPID(t)
	data, _ := wire.EncodeRequest(req)
	path := writeRequest(t, f.layout, req.ID+".json", data)
	waitGone(t, path)
	if n := term.count.Load(); n != 0 {
		t.Errorf("the terminal was asked %d times for a dead child", n)
	}
}

func TestRequesterGivingUpCancelsThePrompt(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	c := f.client()
	c.Timeout = 300 * time.Millisecond
	result := make(chan decision.Decision, 1)
	req := ask(t, "make deploy")
	go func() { result <- c.Forward(t.Context(), req) }()
	a := <-term.asked
	if a.Request.ID != req.ID {
		t.Fatalf("asked about %s", a.Request.ID)
	}
	if d := <-result; !d.Unavailable() {
		t.Fatalf("child: %+v", d)
	}
	// The broker notices the request is gone and releases the prompt
	// without writing a response.
	deadline := time.After(10 * time.Second)
	for {
		f.broker.mu.Lock()
		_, busy := f.broker.inflight[req.ID]
		f.broker.mu.Unlock()
		if !busy {
			break
		}
		select {
		case <-deadline:
			t.Fatal("the prompt for a departed child was never released")
		case <-time.After(5 * time.Millisecond):
		}
	}
	respPath, _ := f.layout.ResponsePath("parent", req.ID)
	if _, err := os.Lstat(respPath); err == nil {
		t.Error("a response was written for a child that left")
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

func TestFailedWriteIsRetriedWithoutAskingAgain(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	result := make(chan decision.Decision, 1)
	go func() { result <- f.client().Forward(t.Context(), ask(t, "make deploy")) }()
	<-term.asked
	// Make the response write fail: responses/ replaced by a file.
	responses, _ := f.layout.ResponsesDir("parent")
	if err := os.RemoveAll(responses); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(responses, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	term.answer <- decision.Allow(provenance.User{Via: provenance.ViaTerminal})
	// Wait until the broker has the decision but could not write it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		f.broker.mu.Lock()
		n := len(f.broker.unwritten)
		f.broker.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failed write was not recorded")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.Remove(responses); err != nil {
		t.Fatal(err)
	}
	d := <-result // the rescan rewrites the kept decision
	if !d.Approved() {
		t.Errorf("decision: %+v", d)
	}
	if n := term.count.Load(); n != 1 {
		t.Errorf("terminal asked %d times, want 1", n)
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

// A response planted (unbound, or copied from another request) before the
// broker answers neither stops the broker's answer nor survives it: the
// broker writes its own, bound answer over it. Regression test for issue 7
// point 5: before the binding, any file at responses/<id>.json counted as
// "answered already" and the plant was the only answer the child saw.
func TestPlantedResponseIsAnsweredOver(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	if err := layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	approve := decision.Allow(provenance.User{Via: provenance.ViaTerminal}).Response("parent", 1)
	other := ask(t, "git status")
	otherData, _ := wire.EncodeRequest(other)
	plants := map[string]wire.Response{
		"unbound": approve,
		"copied":  approve.Bind(other.ID, wire.RequestDigest(otherData)),
	}
	var paths []string
	var reqs []wire.Request
	var digests []string
	for name, plant := range plants {
		req := ask(t, "npm install "+name) // denied by a rule
		reqData, _ := wire.EncodeRequest(req)
		data, _ := wire.EncodeResponse(plant)
		if err := layout.WriteResponse("parent", req.ID, data); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, writeRequest(t, layout, req.ID+".json", reqData))
		reqs = append(reqs, req)
		digests = append(digests, wire.RequestDigest(reqData))
	}
	newFixtureAt(t, layout, Headless{})
	for i, path := range paths {
		waitGone(t, path)
		respPath, _ := layout.ResponsePath("parent", reqs[i].ID)
		data, err := mailbox.ReadFile(respPath)
		if err != nil {
			t.Fatal(err)
		}
		resp, _, err := wire.DecodeResponse(data)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Approved || wire.CheckBinding(resp, reqs[i].ID, digests[i], true) != nil {
			t.Errorf("%s: the planted answer survived: %s", reqs[i].Value, data)
		}
	}
}

// A decision kept after a failed write is dropped once its request is gone
// (the child gave up): before, it stayed in memory for the broker's life.
func TestUnwrittenAnswerOfAGoneRequestIsDropped(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	req := ask(t, "make deploy")
	data, _ := wire.EncodeRequest(req)
	path := writeRequest(t, f.layout, req.ID+".json", data)
	<-term.asked
	responses, _ := f.layout.ResponsesDir("parent")
	if err := os.RemoveAll(responses); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(responses, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	term.answer <- decision.Allow(provenance.User{Via: provenance.ViaTerminal})
	unwritten := func() int {
		f.broker.mu.Lock()
		defer f.broker.mu.Unlock()
		return len(f.broker.unwritten)
	}
	for deadline := time.Now().Add(10 * time.Second); unwritten() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the failed write was not recorded")
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); unwritten() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the decision of a request that is gone is still kept")
		}
	}
}

// An answered request that cannot be removed (a read-only or failing
// mailbox) is removed on a later rescan once the fault clears. Found by
// the resource-fault campaign: the watcher was told "done" although the
// file stayed, so the request sat in the inbox for the broker's life.
func TestAnsweredRequestIsRemovedOnceItCanBe(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	req := ask(t, "git status")
	data, _ := wire.EncodeRequest(req)
	path := writeRequest(t, layout, req.ID+".json", data)
	requests := filepath.Dir(path)
	// An immutable directory: nothing in it can be removed, even by root.
	if err := setImmutable(requests, true); err != nil {
		t.Skipf("cannot make %s immutable here: %v", requests, err)
	}
	t.Cleanup(func() { setImmutable(requests, false) })
	f := newFixtureAt(t, layout, Headless{})
	respPath, _ := layout.ResponsePath("parent", req.ID)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Lstat(respPath); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request was not answered")
		}
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("the request went away from an immutable directory: %v", err)
	}
	if err := setImmutable(requests, false); err != nil {
		t.Fatal(err)
	}
	waitGone(t, path) // the next rescan removes it (default: 1 s)
	if _, err := os.Lstat(respPath); err != nil {
		t.Errorf("the answer is gone: %v", err)
	}
	_ = f
}

// fsImmutableFL is FS_IMMUTABLE_FL of linux/fs.h (chattr +i).
const fsImmutableFL = 0x10

// setImmutable sets or clears the immutable flag on path.
func setImmutable(path string, on bool) error {
	d, err := os.Open(path)
	if err != nil {
		return err
	}
	defer d.Close()
	flags, err := unix.IoctlGetUint32(int(d.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	if on {
		flags |= fsImmutableFL
	} else {
		flags &^= fsImmutableFL
	}
	return unix.IoctlSetPointerInt(int(d.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
}
