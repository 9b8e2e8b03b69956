package grants

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// testAsked is what the tests' grants are given for.
var testAsked = Asked{
	RequestID: "perm-1", Surface: "bash", Value: "git push origin main", Agent: "Explore",
	At: time.Date(2026, 7, 15, 10, 11, 12, 345e6, time.UTC), DecidedBy: provenance.User{Via: provenance.ViaDialog},
}

func TestJournalRoundTrip(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	j, err := Open(layout, Broker, "parent session/é")
	if err != nil {
		t.Fatal(err)
	}
	empty := rules.NewSessionRules("")
	if err := j.Load(empty); err != nil || empty.Len() != 0 {
		t.Fatalf("missing journal: %v, %d grants", err, empty.Len())
	}
	s := rules.NewSessionRules("")
	if _, err := s.Record(rules.WidthProven, rules.SessionGrant{Surface: "bash", Pattern: "git push *"}, rules.SessionGrant{Surface: "path_write", Pattern: "/w/src/*"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Save(s, testAsked); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(j.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal file: %v %v", fi, err)
	}
	again, _ := Open(layout, Broker, "parent session/é")
	back := rules.NewSessionRules("")
	if err := again.Load(back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Grants(), s.Grants()) {
		t.Errorf("reloaded %v, want %v", back.Grants(), s.Grants())
	}
	for _, e := range again.Entries(back) {
		if !reflect.DeepEqual(e.Asked, testAsked) {
			t.Errorf("%v: facts %+v, want %+v", e.Grant, e.Asked, testAsked)
		}
	}
	data, _ := os.ReadFile(j.Path())
	for _, want := range []string{`"version":2`, `"side":"broker"`, `"session":"parent session/é"`, `"requestId":"perm-1"`,
		`"asked":{"surface":"bash","value":"git push origin main"}`, `"agent":"Explore"`, `"recordedAt":"2026-07-15T10:11:12.345Z"`,
		`"decidedBy":{"kind":"user","via":"dialog"}`, `"edited":false`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("journal %s lacks %s", data, want)
		}
	}
}

// The facts of a grant are those of the Save that first journaled it: a
// later Save with other facts does not rewrite them.
func TestSaveKeepsTheFirstFacts(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	j, s := owner(t, layout, Broker)
	record(t, s, gitPush)
	if err := j.Save(s, testAsked); err != nil {
		t.Fatal(err)
	}
	later := testAsked
	later.RequestID, later.Edited = "perm-2", true
	record(t, s, deploy)
	if err := j.Save(s, later); err != nil {
		t.Fatal(err)
	}
	l, err := j.List()
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{l.Grants[0].RequestID, l.Grants[1].RequestID}; !reflect.DeepEqual(got, []string{"perm-1", "perm-2"}) || l.Grants[0].Edited || !l.Grants[1].Edited {
		t.Errorf("listed %+v", l.Grants)
	}
	if err := j.Save(s, Asked{}); err == nil || !errors.Is(err, ErrNotSaved) {
		t.Errorf("Save without facts: %v, want ErrNotSaved", err)
	}
}

func TestAskedFor(t *testing.T) {
	at := testAsked.At
	long := strings.Repeat("é", 400)
	tests := []struct {
		name string
		req  wire.Request
		d    decision.Decision
		want Asked
	}{
		{
			name: "display value on the gate surface",
			req:  wire.Request{ID: "r1", RequesterAgentName: "Explore", Surface: "write", Value: "/w/a.go", AccessIntent: &wire.AccessIntent{Surface: "path_write", MatchValues: []string{"/w/a.go"}}},
			d:    decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}},
			want: Asked{RequestID: "r1", Surface: "path_write", Value: "/w/a.go", Agent: "Explore", At: at, DecidedBy: provenance.User{Via: provenance.ViaDialog}},
		},
		{
			name: "edited at the prompt; no display value",
			req:  wire.Request{ID: "r2", RequesterAgentName: "a", AccessIntent: &wire.AccessIntent{Surface: "bash", MatchValues: []string{"npm test"}}},
			d:    decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}, Grants: []wire.SuggestedGrant{{Surface: "bash", Pattern: "npm test"}}},
			want: Asked{RequestID: "r2", Surface: "bash", Value: "npm test", Agent: "a", At: at, DecidedBy: provenance.User{Via: provenance.ViaDialog}, Edited: true},
		},
		{
			name: "a long value is cut",
			req:  wire.Request{ID: "r3", Surface: "bash", Value: long},
			d:    decision.Decision{DecidedBy: provenance.Forwarded{Decision: provenance.User{Via: provenance.ViaDialog}}},
			want: Asked{RequestID: "r3", Surface: "bash", Value: strings.Repeat("é", 254) + "…", At: at, DecidedBy: provenance.Forwarded{Decision: provenance.User{Via: provenance.ViaDialog}}},
		},
	}
	for _, tt := range tests {
		if got := AskedFor(tt.req, tt.d, at); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestSidesAndSessionsDoNotShareAFile(t *testing.T) {
	layout := mailbox.Layout{Root: "/r"}
	a, _ := Open(layout, Broker, "s")
	b, _ := Open(layout, Child, "s")
	c, _ := Open(layout, Broker, "s2")
	if a.Path() == b.Path() || a.Path() == c.Path() {
		t.Errorf("paths collide: %s %s %s", a.Path(), b.Path(), c.Path())
	}
	if _, err := Open(layout, Broker, ".."); err == nil {
		t.Error("session .. accepted")
	}
}

// writeJournal puts content at j's path with mode, as a hand or another
// program would.
func writeJournal(t *testing.T, layout mailbox.Layout, j *Journal, content string, mode os.FileMode) {
	t.Helper()
	if err := layout.EnsureDir(filepath.Dir(j.Path())); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(j.Path(), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(j.Path(), mode); err != nil {
		t.Fatal(err)
	}
}
