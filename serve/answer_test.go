package serve

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

func TestWholeSessionGrantIsRecordedJournaledAndReused(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	first := make(chan decision.Decision, 1)
	go func() { first <- f.client().Forward(t.Context(), ask(t, "make deploy")) }()
	a := <-term.asked
	if a.Request.SessionApproval == nil {
		t.Fatal("the ask carries no grant suggestion")
	}
	by := provenance.User{Via: provenance.ViaDialog}
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
	term.answer <- decision.Decision{State: decision.StateApprovedForSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}, SessionGrantWidth: wire.GrantFamily}
	d := <-result
	if d.State != decision.StateApprovedForSession || d.SessionGrantWidth != wire.GrantFamily {
		t.Fatalf("decision: %+v", d)
	}
	if f.broker.Policy.Sessions().Len() != 0 {
		t.Error("a subagent-only grant was recorded by the broker")
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
	term.answer <- decision.Allow(provenance.User{Via: provenance.ViaDialog})
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

// sixSuggestions is the attack of the hardening review: an ask for
// `npm test` whose "yes, for the whole session" suggested six grants, the
// last of them hidden below the prompt's fold, `bash *` and `path_write /*`
// among them.
var sixSuggestions = []wire.SuggestedGrant{
	{Surface: "bash", Pattern: "npm test *"},
	{Surface: "bash", Pattern: "npm *"},
	{Surface: "bash", Pattern: "sudo *"},
	{Surface: "bash", Pattern: "npm test *"},
	{Surface: "bash", Pattern: "*"},
	{Surface: "path_write", Pattern: "/*"},
}

// hardenedFixture serves the embedded default rules (npm test asks, sudo
// and force pushes are denied) with a review log the test can read.
func hardenedFixture(t *testing.T, term Terminal) (*fixture, string) {
	t.Helper()
	cfg, err := rules.Load("")
	if err != nil {
		t.Fatal(err)
	}
	layout := mailbox.Layout{Root: t.TempDir()}
	policy, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{layout.Root}})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "review.jsonl")
	log, err := reviewlog.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	f := newFixtureWith(t, layout, term, func(b *Broker) { b.Policy, b.Log = policy, log })
	return f, logPath
}

func askWith(t *testing.T, session, value string, suggested []wire.SuggestedGrant) wire.Request {
	t.Helper()
	id, _ := forward.NewRequestID()
	req, err := forward.Ask{Session: session, Agent: "Explore", Surface: "bash", Value: value, Cwd: "/w", Grants: suggested}.Request(id, "parent", time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestWholeSessionRecordsOnlyAdmittedGrants: of the six suggestions only
// `npm test *` reaches the terminal and the session rules; every other one
// is dropped and logged, and another child's `sudo rm -rf /` and force
// push are still denied by the config, not allowed by a grant.
func TestWholeSessionRecordsOnlyAdmittedGrants(t *testing.T) {
	term := newHeldTerminal()
	f, logPath := hardenedFixture(t, term)
	result := make(chan decision.Decision, 1)
	go func() { result <- f.client().Forward(t.Context(), askWith(t, "child", "npm test", sixSuggestions)) }()
	a := <-term.asked
	want := []wire.SuggestedGrant{{Surface: "bash", Pattern: "npm test *"}}
	if !reflect.DeepEqual(a.Grants, want) {
		t.Errorf("the terminal was offered %v, want %v", a.Grants, want)
	}
	term.answer <- decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}}
	if d := <-result; !d.Approved() {
		t.Fatalf("npm test: %+v", d)
	}
	if got := f.broker.Policy.Sessions().Grants(); !reflect.DeepEqual(got, []rules.SessionGrant{{Surface: "bash", Pattern: "npm test *"}}) {
		t.Errorf("recorded %v", got)
	}
	for _, line := range []string{"sudo rm -rf /", "git push --force origin main"} {
		d := f.client().Forward(t.Context(), askWith(t, "child-2", line, nil))
		if d.Approved() || bySessionGrant(d) {
			t.Errorf("%q: %+v (%#v)", line, d, d.DecidedBy)
		}
		if _, ok := provenance.Effective(d.DecidedBy).(provenance.Rule); !ok {
			t.Errorf("%q decided by %#v, want the config's rule", line, d.DecidedBy)
		}
	}
	if n := term.count.Load(); n != 1 {
		t.Errorf("terminal asked %d times, want 1", n)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, dropped := range []string{`bash \"npm *\"`, `bash \"sudo *\"`, `bash \"*\"`, `path_write \"/*\"`, `a duplicate`} {
		if !strings.Contains(string(data), dropped) {
			t.Errorf("the review log does not name the dropped grant %s:\n%s", dropped, data)
		}
	}
}

// TestOperatorGrantsNeedOnlyCover: grants the operator typed at the prompt
// are recorded at the width the operator chose, provided each covers a
// value that was asked; any other is dropped and logged.
func TestOperatorGrantsNeedOnlyCover(t *testing.T) {
	term := newHeldTerminal()
	f, logPath := hardenedFixture(t, term)
	result := make(chan decision.Decision, 1)
	go func() {
		result <- f.client().Forward(t.Context(), askWith(t, "child", "npm test && npm run lint", nil))
	}()
	<-term.asked
	term.answer <- decision.Decision{
		State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaDialog},
		Grants: []wire.SuggestedGrant{
			{Surface: "bash", Pattern: "npm *"},        // wider than suggested: the operator chose it
			{Surface: "bash", Pattern: "sudo *"},       // covers nothing asked
			{Surface: "path_write", Pattern: "/*"},     // another surface
			{Surface: "bash", Pattern: "npm run lint"}, // exact
		},
	}
	if d := <-result; !d.Approved() {
		t.Fatalf("decision: %+v", d)
	}
	want := []rules.SessionGrant{{Surface: "bash", Pattern: "npm *"}, {Surface: "bash", Pattern: "npm run lint"}}
	if got := f.broker.Policy.Sessions().Grants(); !reflect.DeepEqual(got, want) {
		t.Errorf("recorded %v, want %v", got, want)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, dropped := range []string{`bash \"sudo *\"`, `path_write \"/*\"`} {
		if !strings.Contains(string(data), dropped) {
			t.Errorf("the review log does not name the dropped grant %s", dropped)
		}
	}
}
