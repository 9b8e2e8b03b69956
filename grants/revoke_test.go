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
	if err := owner.Save(s, testAsked); err != nil {
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

func TestListing(t *testing.T) {
	layout, j := journalWith(t, Broker, gitPush, rules.SessionGrant{Surface: "bash", Pattern: "<opaque-bash-wrapper>"})
	l, err := j.List()
	if err != nil {
		t.Fatal(err)
	}
	listed := func(pattern string) Listed {
		return Listed{Surface: "bash", Pattern: pattern, RequestID: "perm-1", Asked: ListedAsk{Surface: "bash", Value: "git push origin main"},
			Agent: "Explore", RecordedAt: "2026-07-15T10:11:12.345Z", DecidedBy: testAsked.DecidedBy, Journal: j.Path()}
	}
	want := Listing{Session: "s", Side: Broker, Journal: j.Path(), Grants: []Listed{listed("git push *"), listed("<opaque-bash-wrapper>")}}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("List = %+v, want %+v", l, want)
	}
	var table, js bytes.Buffer
	if err := l.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	facts := `      request perm-1: bash "git push origin main" asked by "Explore", recorded 2026-07-15T10:11:12.345Z, answered by the user via dialog` + "\n"
	wantTable := `2 whole-session grants of session "s", from ` + j.Path() + ":\n" +
		"  bash  \"git push *\"\n" + facts +
		"  bash  \"<opaque-bash-wrapper>\"\n" + facts
	if table.String() != wantTable {
		t.Errorf("table:\n%s\nwant:\n%s", table.String(), wantTable)
	}
	if err := l.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"pattern": "<opaque-bash-wrapper>"`, `"journal": "` + j.Path() + `"`, `"requestId": "perm-1"`,
		`"recordedAt": "2026-07-15T10:11:12.345Z"`, `"decidedBy": {`, `"kind": "user"`, `"edited": false`} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("json lacks %s:\n%s", want, js.String())
		}
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
