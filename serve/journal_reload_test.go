package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
)

// reportsTo collects the broker's reports (its stderr lines) on a channel.
func reportsTo(ch chan<- string) func(*Broker) {
	return func(b *Broker) {
		b.OnError = func(err error) {
			select {
			case ch <- err.Error():
			default:
			}
		}
	}
}

// waitReport waits for a report containing want, with a deadline.
func waitReport(t *testing.T, reports <-chan string, want string) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-reports:
			if strings.Contains(r, want) {
				return r
			}
		case <-deadline:
			t.Fatalf("no report containing %q within 10s", want)
		}
	}
}

// wholeSession records "make deploy" for the whole session through the
// terminal, as the operator's prompt does.
func wholeSession(t *testing.T, f *fixture, term *heldTerminal) {
	t.Helper()
	first := make(chan decision.Decision, 1)
	go func() { first <- f.client().Forward(t.Context(), ask(t, "make deploy")) }()
	<-term.asked
	term.answer <- decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaTerminal}}
	if d := <-first; !d.Approved() {
		t.Fatalf("first: %+v", d)
	}
	if d := f.client().Forward(t.Context(), ask(t, "make deploy")); !bySessionGrant(d) {
		t.Fatalf("the grant did not answer: %+v (%#v)", d, d.DecidedBy)
	}
}

func bySessionGrant(d decision.Decision) bool {
	_, ok := provenance.Effective(d.DecidedBy).(provenance.SessionApproval)
	return ok && d.Approved()
}

// A grant the broker recorded and journaled itself, revoked from another
// process while it serves, no longer answers: the next ask reaches the
// terminal again. The reload is logged.
func TestRunningBrokerTakesInARevoke(t *testing.T) {
	term := newHeldTerminal()
	reports := make(chan string, 64)
	logPath := filepath.Join(t.TempDir(), "review.jsonl")
	log, err := reviewlog.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, term, func(b *Broker) {
		reportsTo(reports)(b)
		b.Log = log
	})
	wholeSession(t, f, term)

	// broker grants revoke, in another process: a Journal of its own.
	cli, err := grants.Open(f.layout, grants.Broker, "parent")
	if err != nil {
		t.Fatal(err)
	}
	listing, err := cli.List()
	if err != nil || len(listing.Grants) != 1 || listing.Grants[0].Pattern != "make deploy *" {
		t.Fatalf("the broker's journal lists %+v, %v", listing, err)
	}
	if _, err := cli.Revoke(grants.Selector{Pattern: "make deploy *"}); err != nil {
		t.Fatal(err)
	}
	r := waitReport(t, reports, "session grants reloaded")
	if !strings.Contains(r, cli.Path()) || !strings.Contains(r, "1 revoked, 0 added, 0 now") {
		t.Errorf("report %q", r)
	}
	if n := f.broker.Policy.Sessions().Len(); n != 0 {
		t.Fatalf("%d session grants in memory after the revoke", n)
	}

	next := make(chan decision.Decision, 1)
	go func() { next <- f.client().Forward(t.Context(), ask(t, "make deploy")) }()
	select {
	case <-term.asked:
		term.answer <- decision.Deny("", provenance.User{Via: provenance.ViaTerminal})
	case d := <-next:
		t.Fatalf("answered without the terminal after the revoke: %+v (%#v)", d, d.DecidedBy)
	case <-time.After(10 * time.Second):
		t.Fatal("the ask after the revoke reached nobody within 10s")
	}
	if d := <-next; d.Approved() {
		t.Errorf("after the revoke: %+v", d)
	}

	f.stop()
	var reloaded map[string]any
	for _, e := range readLog(t, logPath) {
		if e["event"] == reviewlog.ForwardedSessionReloaded {
			reloaded = e
		}
	}
	if reloaded == nil || reloaded["journal"] != cli.Path() || reloaded["grants"] != 0.0 || reloaded["sessionId"] != "parent" {
		t.Fatalf("review entry %v", reloaded)
	}
	if revoked, _ := reloaded["revoked"].([]any); len(revoked) != 1 {
		t.Errorf("revoked %v", reloaded["revoked"])
	}
}

// A grant recorded after a revoke the broker has not yet taken in does
// not bring the revoked grant back.
func TestRecordingAfterARevokeKeepsItRevoked(t *testing.T) {
	term := newHeldTerminal()
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, term, func(b *Broker) {
		b.SweepInterval = time.Hour // no reload on a tick: only the save takes the revoke in
	})
	wholeSession(t, f, term)
	cli, _ := grants.Open(f.layout, grants.Broker, "parent")
	if _, err := cli.Revoke(grants.Selector{Pattern: "make deploy *"}); err != nil {
		t.Fatal(err)
	}
	d := make(chan decision.Decision, 1)
	go func() { d <- f.client().Forward(t.Context(), ask(t, "git push origin main")) }()
	<-term.asked
	term.answer <- decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaTerminal}}
	<-d
	want := []rules.SessionGrant{{Surface: "bash", Pattern: "git push *"}}
	listing, err := cli.List()
	if err != nil || len(listing.Grants) != 1 || listing.Grants[0].Pattern != want[0].Pattern {
		t.Errorf("journal %+v, %v; want %v", listing, err, want)
	}
	if got := f.broker.Policy.Sessions().Grants(); len(got) != 1 || got[0] != want[0] {
		t.Errorf("memory %v, want %v", got, want)
	}
}

// A journal that goes bad under a running broker is reported, and the
// grants in memory keep answering.
func TestBadJournalOnReloadKeepsTheGrants(t *testing.T) {
	term := newHeldTerminal()
	reports := make(chan string, 64)
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, term, reportsTo(reports))
	wholeSession(t, f, term)
	if err := os.WriteFile(f.journal.Path(), []byte(`{"version":1,"grants":[{"surface":"bash"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := waitReport(t, reports, "grant journal")
	if !strings.Contains(r, f.journal.Path()) || !strings.Contains(r, "grants[0]") || !strings.Contains(r, "the 1 session grants in memory are kept") {
		t.Errorf("report %q", r)
	}
	if d := f.client().Forward(t.Context(), ask(t, "make deploy")); !bySessionGrant(d) {
		t.Errorf("the grant stopped answering: %+v", d)
	}
}
