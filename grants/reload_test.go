package grants

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
)

// owner opens the journal of session "s" on side as its owner does (a
// broker at startup, a child per ask): Open, then Load into its rules.
func owner(t *testing.T, layout mailbox.Layout, side Side) (*Journal, *rules.SessionRules) {
	t.Helper()
	j, err := Open(layout, side, "s")
	if err != nil {
		t.Fatal(err)
	}
	s := rules.NewSessionRules("")
	if err := j.Load(s); err != nil {
		t.Fatal(err)
	}
	return j, s
}

func record(t *testing.T, s *rules.SessionRules, gs ...rules.SessionGrant) {
	t.Helper()
	if _, err := s.Record(rules.WidthProven, gs...); err != nil {
		t.Fatal(err)
	}
}

// A revoke made after the owner loaded stays revoked when the owner saves
// a grant recorded since, on disk and in the owner's rules.
func TestSaveKeepsWhatOthersRevoked(t *testing.T) {
	layout, cli := journalWith(t, Broker, gitPush, deploy)
	j, s := owner(t, layout, Broker)
	if _, err := cli.Revoke(Selector{Pattern: "git push *"}); err != nil {
		t.Fatal(err)
	}
	record(t, s, readW)
	if err := j.Save(s, testAsked); err != nil {
		t.Fatal(err)
	}
	want := []rules.SessionGrant{deploy, readW}
	if got := onDisk(t, cli); !reflect.DeepEqual(got, want) {
		t.Errorf("journal %v, want %v", got, want)
	}
	if got := s.Grants(); !reflect.DeepEqual(got, want) {
		t.Errorf("memory %v, want %v", got, want)
	}
}

// Two processes of one child session that each record a grant both keep
// theirs: the second save does not write over the first.
func TestSaveKeepsWhatOthersRecorded(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	a, as := owner(t, layout, Child)
	b, bs := owner(t, layout, Child)
	record(t, as, gitPush)
	record(t, bs, deploy)
	if err := a.Save(as, testAsked); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(bs, testAsked); err != nil {
		t.Fatal(err)
	}
	if got, want := onDisk(t, a), []rules.SessionGrant{gitPush, deploy}; !reflect.DeepEqual(got, want) {
		t.Errorf("journal %v, want %v", got, want)
	}
}

func TestSaveRefusesABadJournal(t *testing.T) {
	layout, _ := journalWith(t, Broker, gitPush)
	j, s := owner(t, layout, Broker)
	bad := refusedJournals[2].content
	if err := os.WriteFile(j.Path(), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	record(t, s, deploy)
	err := j.Save(s, testAsked)
	if err == nil || !strings.Contains(err.Error(), j.Path()) || !strings.Contains(err.Error(), "grants[0]") {
		t.Fatalf("Save over a bad journal: %v", err)
	}
	if data, _ := os.ReadFile(j.Path()); string(data) != bad {
		t.Errorf("the bad journal was written over: %s", data)
	}
	if got, want := s.Grants(), []rules.SessionGrant{gitPush, deploy}; !reflect.DeepEqual(got, want) {
		t.Errorf("memory %v, want %v", got, want)
	}
}

func TestReload(t *testing.T) {
	layout, cli := journalWith(t, Broker, gitPush, deploy)
	j, s := owner(t, layout, Broker)
	reload := func() Change {
		t.Helper()
		c, err := j.Reload(s)
		if err != nil {
			t.Fatalf("Reload: %v", err)
		}
		return c
	}
	if c := reload(); c.Reloaded {
		t.Errorf("unchanged journal reloaded: %+v", c)
	}
	record(t, s, readW)
	if err := j.Save(s, testAsked); err != nil {
		t.Fatal(err)
	}
	if c := reload(); c.Reloaded {
		t.Errorf("the owner's own save reloaded: %+v", c)
	}

	if _, err := cli.Revoke(Selector{Pattern: "git push *"}); err != nil {
		t.Fatal(err)
	}
	c := reload()
	if want := (Change{Reloaded: true, Removed: []rules.SessionGrant{gitPush}}); !reflect.DeepEqual(c, want) {
		t.Errorf("after a revoke: %+v, want %+v", c, want)
	}
	if got, want := s.Grants(), []rules.SessionGrant{deploy, readW}; !reflect.DeepEqual(got, want) {
		t.Errorf("memory %v, want %v", got, want)
	}

	// A grant planted in a broker's journal while it runs (the review's
	// finding 4) is refused, with its facts, never taken in; the next
	// Save drops it from the file.
	other, os2 := owner(t, layout, Broker)
	record(t, os2, writeW)
	if err := other.Save(os2, testAsked); err != nil {
		t.Fatal(err)
	}
	c = reload()
	if len(c.Added) != 0 || len(c.Removed) != 0 || len(c.Refused) != 1 || c.Refused[0].Grant != writeW || c.Refused[0].Asked.RequestID != testAsked.RequestID {
		t.Errorf("after a planted grant: %+v", c)
	}
	if got, want := s.Grants(), []rules.SessionGrant{deploy, readW}; !reflect.DeepEqual(got, want) {
		t.Errorf("memory %v after a planted grant, want %v", got, want)
	}
	if err := j.Save(s, testAsked); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(t, j); slices.Contains(got, writeW) {
		t.Errorf("the planted grant survived a save: %v", got)
	}

	// Deleting the journal revokes everything.
	os.Remove(j.Path())
	if c := reload(); !c.Reloaded || len(c.Removed) != 2 || s.Len() != 0 {
		t.Errorf("after removing the journal: %+v, %d grants in memory", c, s.Len())
	}
}

// A journal that cannot be taken in is reported once, and memory keeps
// its grants, whole, until a good journal comes.
func TestReloadNeverHalfApplies(t *testing.T) {
	for _, bad := range refusedJournals {
		t.Run(bad.name, func(t *testing.T) {
			if bad.uid >= 0 && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			layout, _ := journalWith(t, Broker, gitPush, deploy)
			j, s := owner(t, layout, Broker)
			writeJournal(t, layout, j, bad.content, bad.mode)
			if bad.uid >= 0 {
				if err := os.Chown(j.Path(), bad.uid, -1); err != nil {
					t.Fatal(err)
				}
			}
			c, err := j.Reload(s)
			if err == nil || c.Reloaded || !strings.Contains(err.Error(), j.Path()) || !strings.Contains(err.Error(), bad.want) {
				t.Fatalf("Reload of a bad journal: %+v, %v", c, err)
			}
			if got, want := s.Grants(), []rules.SessionGrant{gitPush, deploy}; !reflect.DeepEqual(got, want) {
				t.Errorf("memory %v, want %v", got, want)
			}
			if c, err := j.Reload(s); err != nil || c.Reloaded {
				t.Errorf("the same bad journal again: %+v, %v", c, err)
			}
			os.Remove(j.Path())
			writeJournal(t, layout, j, journalDoc(Broker, entryDoc("bash", "make deploy*")), 0o600)
			if c, err := j.Reload(s); err != nil || !reflect.DeepEqual(c.Removed, []rules.SessionGrant{gitPush}) {
				t.Errorf("a good journal after a bad one: %+v, %v", c, err)
			}
		})
	}
	t.Run("partly valid", func(t *testing.T) {
		layout, _ := journalWith(t, Broker, gitPush)
		j, s := owner(t, layout, Broker)
		os.WriteFile(j.Path(), []byte(journalDoc(Broker, entryDoc("bash", "ok *"), entryDoc("bash", ""))), 0o600)
		if _, err := j.Reload(s); err == nil || !strings.Contains(err.Error(), "grants[1]") {
			t.Errorf("Reload: %v", err)
		}
		if got := s.Grants(); !reflect.DeepEqual(got, []rules.SessionGrant{gitPush}) {
			t.Errorf("memory %v: half applied", got)
		}
	})
}

// Reload never waits for a caller that is recording: it leaves the change
// for a later call.
func TestReloadSkipsWhileRecording(t *testing.T) {
	layout, cli := journalWith(t, Broker, gitPush)
	j, s := owner(t, layout, Broker)
	if _, err := cli.Revoke(Selector{All: true}); err != nil {
		t.Fatal(err)
	}
	done := j.Recording()
	if c, err := j.Reload(s); err != nil || c.Reloaded || s.Len() != 1 {
		t.Errorf("Reload while recording: %+v, %v, %d grants", c, err, s.Len())
	}
	done()
	if c, err := j.Reload(s); err != nil || !c.Reloaded || s.Len() != 0 {
		t.Errorf("Reload after: %+v, %v, %d grants", c, err, s.Len())
	}
	var none *Journal
	none.Recording()()
}

// Owners recording from many goroutines, a reloading timer and other
// processes recording and revoking at once: every grant recorded and not
// revoked is in the journal and in the owner's memory at the end.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	j, s := owner(t, layout, Child)
	const n = 20
	var wg sync.WaitGroup
	stop := make(chan struct{})
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		for {
			select {
			case <-stop:
				return
			default:
				if _, err := j.Reload(s); err != nil {
					t.Errorf("Reload: %v", err)
				}
			}
		}
	}()
	for i := range n {
		wg.Add(2)
		go func() { // the owner, recording whole-session grants
			defer wg.Done()
			done := j.Recording()
			defer done()
			record(t, s, rules.SessionGrant{Surface: "bash", Pattern: fmt.Sprintf("owner %d *", i)})
			if err := j.Save(s, testAsked); err != nil {
				t.Error(err)
			}
		}()
		go func() { // another process recording, then an operator revoking one of its grants
			defer wg.Done()
			o, err := Open(layout, Child, "s")
			if err != nil {
				t.Error(err)
				return
			}
			r := rules.NewSessionRules("")
			if err := o.Load(r); err != nil {
				t.Error(err)
				return
			}
			record(t, r, rules.SessionGrant{Surface: "bash", Pattern: fmt.Sprintf("other %d *", i)}, rules.SessionGrant{Surface: "bash", Pattern: fmt.Sprintf("doomed %d", i)})
			if err := o.Save(r, testAsked); err != nil {
				t.Error(err)
				return
			}
			op, _ := Open(layout, Child, "s")
			if _, err := op.Revoke(Selector{Pattern: fmt.Sprintf("doomed %d", i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-reloaded
	if _, err := j.Reload(s); err != nil {
		t.Fatal(err)
	}
	want := map[rules.SessionGrant]bool{}
	for i := range n {
		want[rules.SessionGrant{Surface: "bash", Pattern: fmt.Sprintf("owner %d *", i)}] = true
		want[rules.SessionGrant{Surface: "bash", Pattern: fmt.Sprintf("other %d *", i)}] = true
	}
	for name, got := range map[string][]rules.SessionGrant{"journal": onDisk(t, j), "memory": s.Grants()} {
		have := map[rules.SessionGrant]bool{}
		for _, g := range got {
			have[g] = true
		}
		if !reflect.DeepEqual(have, want) {
			t.Errorf("%s holds %d grants %v, want %d", name, len(have), got, len(want))
		}
	}
}
