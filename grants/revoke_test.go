package grants

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
)

var (
	gitPush   = rules.SessionGrant{Surface: "bash", Pattern: "git push *"}
	deploy    = rules.SessionGrant{Surface: "bash", Pattern: "make deploy*"}
	readW     = rules.SessionGrant{Surface: "path_read", Pattern: "/w/*"}
	writeW    = rules.SessionGrant{Surface: "path_write", Pattern: "/w/*"}
	fourHeld  = []rules.SessionGrant{gitPush, readW, writeW, deploy}
	emptyHeld = []rules.SessionGrant{}
)

// journalWith saves gs as the journal of session "s" on side and returns
// a fresh Journal of it, as another process would open it.
func journalWith(t *testing.T, side Side, gs ...rules.SessionGrant) (mailbox.Layout, *Journal) {
	t.Helper()
	layout := mailbox.Layout{Root: t.TempDir()}
	owner, err := Open(layout, side, "s")
	if err != nil {
		t.Fatal(err)
	}
	s := rules.NewSessionRules("")
	if err := owner.Load(s); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Record(rules.WidthProven, gs...); err != nil {
		t.Fatal(err)
	}
	if err := owner.Save(s); err != nil {
		t.Fatal(err)
	}
	other, err := Open(layout, side, "s")
	if err != nil {
		t.Fatal(err)
	}
	return layout, other
}

func onDisk(t *testing.T, j *Journal) []rules.SessionGrant {
	t.Helper()
	l, err := j.List()
	if err != nil {
		t.Fatal(err)
	}
	gs := make([]rules.SessionGrant, len(l.Grants))
	for i, g := range l.Grants {
		gs[i] = rules.SessionGrant{Surface: g.Surface, Pattern: g.Pattern}
	}
	return gs
}

func TestRevoke(t *testing.T) {
	tests := []struct {
		name          string
		sel           Selector
		removed, left []rules.SessionGrant
		// wantErr is a substring of the error; "" for none.
		wantErr   string
		noMatch   bool
		errAlsoIn []string
	}{
		{name: "one pattern", sel: Selector{Pattern: "git push *"}, removed: []rules.SessionGrant{gitPush}, left: []rules.SessionGrant{readW, writeW, deploy}},
		{name: "a pattern on several surfaces", sel: Selector{Pattern: "/w/*"}, removed: []rules.SessionGrant{readW, writeW}, left: []rules.SessionGrant{gitPush, deploy}},
		{name: "surface narrows", sel: Selector{Pattern: "/w/*", Surface: "path_write"}, removed: []rules.SessionGrant{writeW}, left: []rules.SessionGrant{gitPush, readW, deploy}},
		{name: "all", sel: Selector{All: true}, removed: fourHeld, left: emptyHeld},
		{name: "all on one surface", sel: Selector{All: true, Surface: "bash"}, removed: []rules.SessionGrant{gitPush, deploy}, left: []rules.SessionGrant{readW, writeW}},
		{
			name: "unknown pattern", sel: Selector{Pattern: "git push"}, left: fourHeld, noMatch: true,
			wantErr:   `no grant with pattern "git push"; it holds 4 grants: bash "git push *", path_read "/w/*", path_write "/w/*", bash "make deploy*"`,
			errAlsoIn: []string{"grant journal ", filepath.Join("courier", "grants", "broker", "s.json")},
		},
		{
			name: "pattern not on that surface", sel: Selector{Pattern: "git push *", Surface: "path_write"}, left: fourHeld, noMatch: true,
			wantErr: `no grant with pattern "git push *" on surface path_write; it holds 4 grants`,
		},
		{name: "unknown surface with all", sel: Selector{All: true, Surface: "bsh"}, left: fourHeld, noMatch: true, wantErr: "no grant on surface bsh; it holds 4 grants"},
		{name: "a pattern and all", sel: Selector{Pattern: "x", All: true}, left: fourHeld, wantErr: "give one"},
		{name: "neither", sel: Selector{}, left: fourHeld, wantErr: "no pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, j := journalWith(t, Broker, fourHeld...)
			before, _ := os.ReadFile(j.Path())
			removed, err := j.Revoke(tt.sel)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Revoke: %v", err)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Revoke error = %v, want one containing %q", err, tt.wantErr)
				}
				for _, s := range tt.errAlsoIn {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				var nm *NoMatchError
				if got := errors.As(err, &nm); got != tt.noMatch || errors.Is(err, ErrNoGrant) != tt.noMatch {
					t.Errorf("NoMatchError: %v, want %v", got, tt.noMatch)
				}
				if after, _ := os.ReadFile(j.Path()); !bytes.Equal(before, after) {
					t.Errorf("a failed revoke rewrote the journal:\n%s\nwas\n%s", after, before)
				}
			}
			if !reflect.DeepEqual(removed, tt.removed) {
				t.Errorf("removed %v, want %v", removed, tt.removed)
			}
			if got := onDisk(t, j); !reflect.DeepEqual(got, tt.left) {
				t.Errorf("journal holds %v, want %v", got, tt.left)
			}
		})
	}
}

func TestRevokeInAMissingJournal(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	j, _ := Open(layout, Child, "s")
	if removed, err := j.Revoke(Selector{All: true}); err != nil || len(removed) != 0 {
		t.Errorf("all of nothing: %v, %v", removed, err)
	}
	_, err := j.Revoke(Selector{Pattern: "git push *"})
	if !errors.Is(err, ErrNoGrant) || !strings.Contains(err.Error(), j.Path()+`: no grant with pattern "git push *"; it holds no grants`) {
		t.Errorf("a pattern in nothing: %v", err)
	}
	// The directory exists, the file does not.
	if err := layout.EnsureDir(filepath.Dir(j.Path())); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Revoke(Selector{Pattern: "x"}); !errors.Is(err, ErrNoGrant) {
		t.Errorf("a pattern in an empty directory: %v", err)
	}
	if _, err := os.Lstat(j.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("revoking nothing created the journal: %v", err)
	}
}

// badJournals are files a journal must be refused as, each with what the
// error says.
var badJournals = []struct {
	name, content, want string
}{
	{"not json", `{"version":1,"grants":[`, "snapshot"},
	{"wrong shape", `{"version":1,"grants":[{"surface":"bash"}]}`, "grants[0]"},
	{"wildcard surface", `{"version":1,"grants":[{"surface":"*","pattern":"*"}]}`, "wildcard"},
	{"wrong version", `{"version":2,"grants":[]}`, "version"},
	{"null grants", `{"version":1,"grants":null}`, "expected an array"},
}

// TestBadJournalIsNeverEdited: List and Revoke refuse a journal that is
// malformed or unsafe with an error naming the file, and write nothing.
func TestBadJournalIsNeverEdited(t *testing.T) {
	for _, tt := range badJournals {
		t.Run(tt.name, func(t *testing.T) {
			_, j := journalWith(t, Broker, gitPush)
			if err := os.WriteFile(j.Path(), []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := j.List(); err == nil || !strings.Contains(err.Error(), j.Path()) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("List: %v, want an error naming %s and %q", err, j.Path(), tt.want)
			}
			for _, sel := range []Selector{{Pattern: "git push *"}, {All: true}} {
				if _, err := j.Revoke(sel); err == nil || !strings.Contains(err.Error(), j.Path()) || errors.Is(err, ErrNoGrant) {
					t.Errorf("Revoke(%v): %v, want an error naming %s", sel, err, j.Path())
				}
			}
			if after, _ := os.ReadFile(j.Path()); string(after) != tt.content {
				t.Errorf("the bad journal was rewritten: %s", after)
			}
		})
	}
	t.Run("symlink", func(t *testing.T) {
		_, j := journalWith(t, Broker, gitPush)
		target := filepath.Join(t.TempDir(), "elsewhere.json")
		if err := os.WriteFile(target, []byte(`{"version":1,"grants":[{"surface":"bash","pattern":"git push *"}]}`), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(j.Path())
		if err := os.Symlink(target, j.Path()); err != nil {
			t.Fatal(err)
		}
		if _, err := j.List(); err == nil || !strings.Contains(err.Error(), j.Path()) {
			t.Errorf("List through a symlink: %v", err)
		}
		if _, err := j.Revoke(Selector{All: true}); err == nil || !strings.Contains(err.Error(), j.Path()) {
			t.Errorf("Revoke through a symlink: %v", err)
		}
		if fi, err := os.Lstat(j.Path()); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the symlink was replaced: %v %v", fi, err)
		}
	})
}

func TestListing(t *testing.T) {
	layout, j := journalWith(t, Broker, gitPush, rules.SessionGrant{Surface: "bash", Pattern: "<opaque-bash-wrapper>"})
	l, err := j.List()
	if err != nil {
		t.Fatal(err)
	}
	want := Listing{Session: "s", Side: Broker, Journal: j.Path(), Grants: []Listed{
		{Surface: "bash", Pattern: "git push *", Journal: j.Path()},
		{Surface: "bash", Pattern: "<opaque-bash-wrapper>", Journal: j.Path()},
	}}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("List = %+v, want %+v", l, want)
	}
	var table, js bytes.Buffer
	if err := l.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	wantTable := `2 whole-session grants of session "s", from ` + j.Path() + ":\n" +
		"  bash  \"git push *\"\n" +
		"  bash  \"<opaque-bash-wrapper>\"\n"
	if table.String() != wantTable {
		t.Errorf("table:\n%s\nwant:\n%s", table.String(), wantTable)
	}
	if err := l.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"pattern": "<opaque-bash-wrapper>"`) || !strings.Contains(js.String(), `"journal": "`+j.Path()+`"`) {
		t.Errorf("json:\n%s", js.String())
	}

	missing, _ := Open(layout, Child, "nobody")
	l, err = missing.List()
	if err != nil || len(l.Grants) != 0 || l.Grants == nil || l.Journal != missing.Path() {
		t.Fatalf("missing journal: %+v, %v", l, err)
	}
	table.Reset()
	l.WriteTable(&table)
	if want := `no this-subagent-only grants of session "nobody" in ` + missing.Path() + "\n"; table.String() != want {
		t.Errorf("empty table %q, want %q", table.String(), want)
	}
}
