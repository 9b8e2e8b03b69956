package serve

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
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
