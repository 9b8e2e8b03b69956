package grants

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
)

// The uids of the isolation tests: the requesting child's user, and a
// broker's user other than this process's.
const (
	childUID       = 61002
	otherBrokerUID = 61001
	askGID         = 61000
)

// brokerLayout is an isolation tree whose broker's user is this process,
// with the ask group this process's own (a member of it, root or not).
func brokerLayout(t *testing.T) mailbox.Layout {
	t.Helper()
	layout := mailbox.Layout{Root: t.TempDir(), Isolation: &mailbox.Isolation{BrokerUID: os.Geteuid(), GID: os.Getegid()}}
	if err := layout.PrepareIsolated(); err != nil {
		t.Fatal(err)
	}
	return layout
}

// childView is how a child sees layout: the broker's uid, no group.
func childView(layout mailbox.Layout) mailbox.Layout {
	return mailbox.Layout{Root: layout.Root, Isolation: &mailbox.Isolation{BrokerUID: layout.Isolation.BrokerUID, GID: -1}}
}

func vouchedAsked() Asked {
	return Asked{
		RequestID: "perm-1757000000123-4f2a9c", Surface: "bash", Value: "npm test", Agent: "Explore",
		At: time.Date(2026, 7, 15, 10, 11, 12, 0, time.UTC), DecidedBy: provenance.User{Via: provenance.ViaDialog},
	}
}

func TestOpenVouchedOnlyInTheIsolationMode(t *testing.T) {
	_, err := OpenVouched(mailbox.Layout{Root: t.TempDir()}, childUID, "child")
	if !errors.Is(err, mailbox.ErrIsolation) {
		t.Errorf("OpenVouched in the same-uid mode: %v, want an error wrapping ErrIsolation", err)
	}
	layout := mailbox.Layout{Root: t.TempDir(), Isolation: &mailbox.Isolation{BrokerUID: os.Geteuid(), GID: -1}}
	if j, err := OpenVouched(layout, childUID, "../x"); err == nil && filepath.Dir(j.Path()) != layout.VouchedDir(childUID) {
		t.Errorf("session ../x escaped the vouched directory: %s", j.Path())
	}
	j, err := OpenVouched(layout, childUID, "child")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(layout.VouchedDir(childUID), "child.json"); j.Path() != want {
		t.Errorf("path %s, want %s", j.Path(), want)
	}
}

// The broker vouches; the child reads what it vouched, read-only, as a
// journal of the broker's user with mode 0644.
func TestVouchThenTheChildLoadsIt(t *testing.T) {
	layout := brokerLayout(t)
	j, err := OpenVouched(layout, childUID, "child")
	if err != nil {
		t.Fatal(err)
	}
	got, err := j.Vouch(rules.WidthFamily, []rules.SessionGrant{{Surface: "path_read", Pattern: "/w/*"}}, vouchedAsked())
	if err != nil {
		t.Fatal(err)
	}
	want := []rules.SessionGrant{{Surface: "path_read", Pattern: "/w/*"}, {Surface: "path_write", Pattern: "/w/*"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("recorded %v, want %v (family width)", got, want)
	}
	// Again: nothing new, nothing rewritten.
	before, _ := os.Stat(j.Path())
	if _, err := j.Vouch(rules.WidthProven, []rules.SessionGrant{{Surface: "path_write", Pattern: "/w/*"}}, vouchedAsked()); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(j.Path()); !os.SameFile(before, after) {
		t.Error("vouching a grant the journal holds rewrote it")
	}
	fi, err := os.Stat(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %04o, want 0644: the child, another user, reads it", fi.Mode().Perm())
	}
	dir, _ := os.Stat(layout.VouchedDir(childUID))
	if dir.Mode().Perm() != 0o710 {
		t.Errorf("directory mode %04o, want 0710", dir.Mode().Perm())
	}

	child, err := OpenVouched(childView(layout), childUID, "child")
	if err != nil {
		t.Fatal(err)
	}
	held := rules.NewSessionRules("")
	if err := child.Load(held); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(held.Grants(), want) {
		t.Errorf("the child loaded %v, want %v", held.Grants(), want)
	}
	l, err := child.List()
	if err != nil || len(l.Grants) != 2 || l.Side != Vouched || l.Session != "child" {
		t.Errorf("list: %+v, %v", l, err)
	}
}

// A vouched journal is the broker's user's, whoever reads it: one owned by
// anyone else (the child itself, writing a grant it wants) is refused
// whole, and so is one of another mode, side or shape, as every journal.
func TestVouchedJournalRefusesWhatTheBrokerDidNotWrite(t *testing.T) {
	good := journalDoc(Vouched, entryDoc("bash", "npm test *"))
	tests := []struct {
		name, content string
		mode          os.FileMode
		uid           int // -1 keeps this process's
		want          string
	}{
		{"the child's own plant", good, 0o644, childUID, "owned by uid 61002"},
		{"the broker's, left 0600", good, 0o600, -1, "mode 0600, expected 0644"},
		{"writable by the group", good, 0o664, -1, "mode 0664, expected 0644"},
		{"a child journal moved here", journalDoc(Child, entryDoc("bash", "npm test *")), 0o644, -1, `written as the child journal of session "s", not the vouched journal`},
		{"the old format", `{"version":1,"grants":[{"surface":"bash","pattern":"*"}]}`, 0o644, -1, "format version 1"},
		{"a grant without its facts", journalDoc(Vouched, `{"surface":"bash","pattern":"*"}`), 0o644, -1, "every grant says what was asked and when"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.uid >= 0 && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root (CI runs these as root)")
			}
			layout := brokerLayout(t)
			j, _ := OpenVouched(layout, childUID, "s")
			if err := layout.EnsureVouchedDir(childUID); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(j.Path(), []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(j.Path(), tt.mode); err != nil {
				t.Fatal(err)
			}
			if tt.uid >= 0 {
				if err := os.Chown(j.Path(), tt.uid, -1); err != nil {
					t.Fatal(err)
				}
			}
			for _, reader := range []mailbox.Layout{layout, childView(layout)} {
				r, _ := OpenVouched(reader, childUID, "s")
				held := rules.NewSessionRules("")
				err := r.Load(held)
				if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("Load: %v, want a refusal saying %q", err, tt.want)
				}
				if held.Len() != 0 {
					t.Errorf("a refused journal was applied: %v", held.Grants())
				}
			}
			if _, err := j.Vouch(rules.WidthProven, []rules.SessionGrant{{Surface: "bash", Pattern: "git status *"}}, vouchedAsked()); !errors.Is(err, ErrRefused) {
				t.Errorf("Vouch over a refused journal: %v, want a refusal", err)
			}
			if data, _ := os.ReadFile(j.Path()); string(data) != tt.content {
				t.Error("Vouch wrote over a refused journal")
			}
		})
	}
}

// The owner a vouched journal must have is the broker's user, not the
// reader's: a child (here this process, even as root) refuses a journal
// of its own uid and takes one of the broker's.
func TestVouchedJournalOwnerIsTheBrokersNotTheReaders(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root (CI runs these as root)")
	}
	root := t.TempDir()
	child := mailbox.Layout{Root: root, Isolation: &mailbox.Isolation{BrokerUID: otherBrokerUID, GID: -1}}
	j, _ := OpenVouched(child, childUID, "s")
	if err := os.MkdirAll(filepath.Dir(j.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(j.Path(), []byte(journalDoc(Vouched, entryDoc("bash", "npm test *"))), 0o644); err != nil {
		t.Fatal(err)
	}
	held := rules.NewSessionRules("")
	if err := j.Load(held); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "owned by uid 0, expected 61001 (the broker's user)") {
		t.Errorf("a journal of the reader's own uid: %v, want refused", err)
	}
	if err := os.Chown(j.Path(), otherBrokerUID, -1); err != nil {
		t.Fatal(err)
	}
	j, _ = OpenVouched(child, childUID, "s")
	if err := j.Load(held); err != nil || held.Len() != 1 {
		t.Errorf("the broker's journal: %v (%d grants)", err, held.Len())
	}
}

// Brokers of several serving sessions vouch into one child's journal at
// once: under the journal's lock, none loses another's grant.
func TestConcurrentVouchersLoseNothing(t *testing.T) {
	layout := brokerLayout(t)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			j, err := OpenVouched(layout, childUID, "child")
			if err != nil {
				t.Error(err)
				return
			}
			g := rules.SessionGrant{Surface: "bash", Pattern: "make target" + string(rune('a'+i)) + " *"}
			if _, err := j.Vouch(rules.WidthProven, []rules.SessionGrant{g}, vouchedAsked()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	j, _ := OpenVouched(childView(layout), childUID, "child")
	held := rules.NewSessionRules("")
	if err := j.Load(held); err != nil {
		t.Fatal(err)
	}
	if held.Len() != n {
		t.Errorf("%d grants kept of %d vouched at once", held.Len(), n)
	}
}

// broker grants revoke --vouched-uid: the broker's user takes a vouched
// grant back, and the journal stays one the child accepts.
func TestRevokeVouched(t *testing.T) {
	layout := brokerLayout(t)
	j, _ := OpenVouched(layout, childUID, "child")
	gs := []rules.SessionGrant{{Surface: "bash", Pattern: "npm test *"}, {Surface: "bash", Pattern: "make *"}}
	if _, err := j.Vouch(rules.WidthProven, gs, vouchedAsked()); err != nil {
		t.Fatal(err)
	}
	removed, err := j.Revoke(Selector{Pattern: "make *"})
	if err != nil || !reflect.DeepEqual(removed, gs[1:]) {
		t.Fatalf("revoke: %v, %v", removed, err)
	}
	c, _ := OpenVouched(childView(layout), childUID, "child")
	held := rules.NewSessionRules("")
	if err := c.Load(held); err != nil || !reflect.DeepEqual(held.Grants(), gs[:1]) {
		t.Errorf("after revoke the child loads %v, %v", held.Grants(), err)
	}
}

// A child reads, in the isolation mode, the journal the broker vouched
// for its uid, never its own (which anything of its uid can write), and
// its own otherwise.
func TestOpenChildPicksTheModesJournal(t *testing.T) {
	plain := mailbox.Layout{Root: t.TempDir()}
	own, err := Open(plain, Child, "child")
	if err != nil {
		t.Fatal(err)
	}
	iso := mailbox.Layout{Root: t.TempDir(), Isolation: &mailbox.Isolation{BrokerUID: otherBrokerUID, GID: -1}}
	tests := []struct {
		name   string
		layout mailbox.Layout
		side   Side
		path   string
	}{
		{"same-uid mode", plain, Child, own.Path()},
		{"isolation mode", iso, Vouched, filepath.Join(iso.VouchedDir(os.Geteuid()), "child.json")},
	}
	for _, tt := range tests {
		j, err := OpenChild(tt.layout, "child")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if j.Path() != tt.path || j.side != tt.side {
			t.Errorf("%s: the %s journal %s, want the %s journal %s", tt.name, j.side, j.Path(), tt.side, tt.path)
		}
	}
}
