package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestRecordWidths(t *testing.T) {
	tests := []struct {
		name  string
		width Width
		grant SessionGrant
		want  []SessionGrant
	}{
		{"proven keeps the surface", WidthProven, SessionGrant{"path_write", "src/*"}, []SessionGrant{{"path_write", "src/*"}}},
		{"zero width is proven", "", SessionGrant{"path_write", "src/*"}, []SessionGrant{{"path_write", "src/*"}}},
		{"family widens to both directions", WidthFamily, SessionGrant{"path_write", "src/*"}, []SessionGrant{{"path_read", "src/*"}, {"path_write", "src/*"}}},
		{"family of external_directory", WidthFamily, SessionGrant{"external_directory_read", "/o/*"}, []SessionGrant{{"external_directory_read", "/o/*"}, {"external_directory_write", "/o/*"}}},
		{"a bare family grant expands even when proven", WidthProven, SessionGrant{"path", "src/*"}, []SessionGrant{{"path_read", "src/*"}, {"path_write", "src/*"}}},
		{"family of a non-path surface is the surface", WidthFamily, SessionGrant{"bash", "git status *"}, []SessionGrant{{"bash", "git status *"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSessionRules(testHome)
			got, err := s.Record(tt.width, tt.grant)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) || !slices.Equal(s.Grants(), tt.want) {
				t.Errorf("recorded %v, stored %v, want %v", got, s.Grants(), tt.want)
			}
		})
	}
}

// A family grant answers the other direction too; a proven one does not.
func TestFamilyGrantResolves(t *testing.T) {
	for _, width := range []Width{WidthProven, WidthFamily} {
		p := mustPolicy(t, `{"permission": {}}`, Options{})
		if _, err := p.Sessions().Record(width, SessionGrant{"path_write", "/repo/*"}); err != nil {
			t.Fatal(err)
		}
		read := p.Resolve(Query{Surface: "path_read", MatchValues: []string{"/repo/a"}})
		write := p.Resolve(Query{Surface: "path_write", MatchValues: []string{"/repo/a"}})
		both := p.Resolve(Query{Surface: "path", MatchValues: []string{"/repo/a"}})
		wantRead := Ask
		if width == WidthFamily {
			wantRead = Allow
		}
		if write.Action != Allow || read.Action != wantRead || both.Action != wantRead {
			t.Errorf("%s: read %s write %s path %s", width, read.Action, write.Action, both.Action)
		}
	}
}

func TestRecordRefuses(t *testing.T) {
	s := NewSessionRules(testHome)
	for _, tt := range []struct {
		width Width
		g     SessionGrant
	}{
		{WidthProven, SessionGrant{"", "x"}},
		{WidthProven, SessionGrant{"bash", ""}},
		{WidthProven, SessionGrant{"*", "*"}},
		{WidthProven, SessionGrant{"mcp_?", "x"}},
		{WidthProven, SessionGrant{"bash", strings.Repeat("x", MaxGrantLength+1)}},
		{WidthProven, SessionGrant{"bash", "\xff"}},
		{"everything", SessionGrant{"bash", "x"}},
	} {
		if _, err := s.Record(tt.width, SessionGrant{"bash", "ok"}, tt.g); !errors.Is(err, ErrInvalidGrant) {
			t.Errorf("Record(%q, %+v) = %v, want ErrInvalidGrant", tt.width, tt.g, err)
		}
	}
	if s.Len() != 0 {
		t.Errorf("a refused batch recorded %v", s.Grants())
	}
}

func TestRecordDeduplicates(t *testing.T) {
	s := NewSessionRules(testHome)
	for range 3 {
		if _, err := s.Record(WidthProven, SessionGrant{"bash", "git status *"}, SessionGrant{"bash", "git status *"}); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != 1 {
		t.Errorf("grants %v", s.Grants())
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := NewSessionRules(testHome)
	if _, err := s.Record(WidthFamily, SessionGrant{"path_write", "~/src/*"}, SessionGrant{"bash", "git status *"}); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(s.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"version":1,"grants":[{"surface":"path_read","pattern":"~/src/*"},{"surface":"path_write","pattern":"~/src/*"},{"surface":"bash","pattern":"git status *"}]}`
	if string(raw) != want {
		t.Errorf("snapshot %s\nwant     %s", raw, want)
	}
	snap, err := DecodeSnapshot(raw)
	if err != nil {
		t.Fatal(err)
	}
	restored := NewSessionRules(testHome)
	if _, err := restored.Record(WidthProven, SessionGrant{"bash", "dropped on restore"}); err != nil {
		t.Fatal(err)
	}
	if err := restored.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(restored.Grants(), s.Grants()) {
		t.Errorf("restored %v, want %v", restored.Grants(), s.Grants())
	}
	p := mustPolicy(t, `{"permission": {}}`, Options{Sessions: restored})
	if d := p.Resolve(Query{Surface: "path_read", MatchValues: []string{testHome + "/src/a.go"}}); d.Action != Allow || d.Origin != OriginSession {
		t.Errorf("restored grant does not resolve: %v", d)
	}
}

func TestDecodeSnapshotRefuses(t *testing.T) {
	for _, doc := range []string{
		``,
		`[]`,
		`{"version":1}`,
		`{"version":2,"grants":[]}`,
		`{"version":"1","grants":[]}`,
		`{"version":1.5,"grants":[]}`,
		`{"version":1,"grants":{}}`,
		`{"version":1,"grants":[],"extra":true}`,
		`{"version":1,"grants":[],"Version":1}`,
		`{"version":1,"grants":[{"surface":"bash"}]}`,
		`{"version":1,"grants":[{"surface":"bash","pattern":"x","width":"family"}]}`,
		`{"version":1,"grants":[{"surface":"bash","pattern":7}]}`,
		`{"version":1,"grants":[{"surface":"*","pattern":"*"}]}`,
		`{"version":1,"grants":[{"surface":"bash","pattern":""}]}`,
		`{"version":1,"grants":[]} trailing`,
		`{"version":1,"grants":[` + strings.Repeat(`{"surface":"bash","pattern":"x"},`, MaxSessionGrants) + `{"surface":"bash","pattern":"x"}]}`,
	} {
		if _, err := DecodeSnapshot([]byte(doc)); !errors.Is(err, ErrInvalidGrant) {
			name := doc
			if len(name) > 80 {
				name = name[:80] + "…"
			}
			t.Errorf("DecodeSnapshot(%s) = %v, want ErrInvalidGrant", name, err)
		}
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add([]byte(`{"version":1,"grants":[{"surface":"bash","pattern":"git status *"}]}`))
	f.Add([]byte(`{"version":1,"grants":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := DecodeSnapshot(data)
		if err != nil {
			return
		}
		s := NewSessionRules(testHome)
		if err := s.Restore(snap); err != nil {
			t.Fatalf("a decoded snapshot does not restore: %v", err)
		}
	})
}

// Readers never block on writers and see whole snapshots; run with -race.
func TestSessionRulesConcurrent(t *testing.T) {
	p := mustPolicy(t, `{"permission": {"bash": {"*": "deny"}}}`, Options{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				if _, err := p.Sessions().Record(WidthProven, SessionGrant{"bash", fmt.Sprintf("cmd-%d-%d *", w, i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for i := range 500 {
				d := p.Resolve(Query{Surface: "bash", MatchValues: []string{fmt.Sprintf("cmd-0-%d x", i%200)}})
				if d.Action == Allow && d.Origin != OriginSession {
					t.Errorf("allow from %s", d.Origin)
				}
				_ = p.Sessions().Snapshot()
			}
		})
	}
	wg.Wait()
	if n := p.Sessions().Len(); n != 800 {
		t.Errorf("%d grants, want 800", n)
	}
}
