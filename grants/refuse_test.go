package grants

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
)

// entryDoc is a whole journal entry for surface and pattern, as courier
// writes it.
func entryDoc(surface, pattern string) string {
	return `{"surface":"` + surface + `","pattern":"` + pattern + `","requestId":"perm-1","asked":{"surface":"bash","value":"git push origin main"},"agent":"Explore","recordedAt":"2026-07-15T10:11:12.345Z","decidedBy":{"kind":"user","via":"dialog"},"edited":false}`
}

// journalDoc is a version 2 journal of session "s" on side.
func journalDoc(side Side, entries ...string) string {
	return `{"version":2,"side":"` + string(side) + `","session":"s","grants":[` + strings.Join(entries, ",") + "]}\n"
}

// refusedJournals are journals a broker must not take in (issue 14), each
// with its mode and what the refusal says.
var refusedJournals = []struct {
	name, content string
	mode          os.FileMode
	uid           int // -1 keeps this process's
	want          string
}{
	{"the issue's hand-written journal", `{"version":1,"grants":[{"surface":"bash","pattern":"*"}]}`, 0o600, -1,
		"format version 1, which records no request, agent, time or decider for its grants"},
	{"hand-written without a version", `{"grants":[{"surface":"bash","pattern":"*"}]}`, 0o600, -1,
		`the journal: no "version", "side", "session": a version 2 journal starts {version, side, session, grants}`},
	{"a grant without what was asked", journalDoc(Broker, `{"surface":"bash","pattern":"*"}`), 0o600, -1,
		`grants[0]: no "requestId", "asked", "agent", "recordedAt", "decidedBy", "edited": every grant says what was asked and when`},
	{"a good journal left readable by others", journalDoc(Broker, entryDoc("bash", "git push *")), 0o644, -1,
		"mode 0644, expected 0600"},
	{"a good journal writable by others", journalDoc(Broker, entryDoc("bash", "git push *")), 0o666, -1,
		"mode 0666, expected 0600"},
	{"another user's journal", journalDoc(Broker, entryDoc("bash", "git push *")), 0o600, 65534,
		"owned by uid 65534"},
	{"another session's journal", strings.Replace(journalDoc(Broker, entryDoc("bash", "git push *")), `"session":"s"`, `"session":"other"`, 1), 0o600, -1,
		`written as the broker journal of session "other", not the broker journal of session "s"`},
	{"a child's journal", journalDoc(Child, entryDoc("bash", "git push *")), 0o600, -1,
		`written as the child journal of session "s", not the broker journal`},
	{"a decider that does not decode", strings.Replace(journalDoc(Broker, entryDoc("bash", "*")), `{"kind":"user","via":"dialog"}`, `{"kind":"operator"}`, 1), 0o600, -1,
		"grants[0].decidedBy: expected who answered"},
	{"no decider", strings.Replace(journalDoc(Broker, entryDoc("bash", "*")), `{"kind":"user","via":"dialog"}`, `null`, 1), 0o600, -1,
		"grants[0].decidedBy: expected who answered"},
	{"no time", strings.Replace(journalDoc(Broker, entryDoc("bash", "*")), `"2026-07-15T10:11:12.345Z"`, `"yesterday"`, 1), 0o600, -1,
		"grants[0].recordedAt: expected an RFC 3339 time"},
	{"an invalid request id", strings.Replace(journalDoc(Broker, entryDoc("bash", "*")), `"perm-1"`, `"../x"`, 1), 0o600, -1,
		"grants[0]: request id"},
	{"an unknown key", strings.Replace(journalDoc(Broker, entryDoc("bash", "*")), `"edited":false`, `"edited":false,"trusted":true`, 1), 0o600, -1,
		`grants[0]: unknown key "trusted"`},
	{"a wildcard surface", journalDoc(Broker, entryDoc("*", "*")), 0o600, -1, "wildcard"},
	{"not JSON", `{"version":2,"grants":[`, 0o600, -1, "grant journal"},
}

// A journal its owner did not write is refused whole, named with what to
// do, and never written over until it is removed; then journaling resumes
// and keeps the grants recorded meanwhile.
func TestJournalRefusesWhatItDidNotWrite(t *testing.T) {
	for _, tt := range refusedJournals {
		t.Run(tt.name, func(t *testing.T) {
			if tt.uid >= 0 && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			layout := mailbox.Layout{Root: t.TempDir()}
			j, _ := Open(layout, Broker, "s")
			writeJournal(t, layout, j, tt.content, tt.mode)
			if tt.uid >= 0 {
				if err := os.Chown(j.Path(), tt.uid, -1); err != nil {
					t.Fatal(err)
				}
			}
			s := rules.NewSessionRules("")
			err := j.Load(s)
			var re *RefusedError
			if !errors.As(err, &re) || !errors.Is(err, ErrRefused) {
				t.Fatalf("Load = %v, want a *RefusedError", err)
			}
			for _, want := range []string{"grant journal " + j.Path() + " refused: ", tt.want, "; remove it: its grants are asked again at the prompt"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if s.Len() != 0 || j.Refused() == nil {
				t.Errorf("%d grants applied, refused %v", s.Len(), j.Refused())
			}

			// Grants recorded meanwhile hold in memory; the file stays.
			record(t, s, deploy)
			if err := j.Save(s, testAsked); !errors.Is(err, ErrNotSaved) || !errors.Is(err, ErrRefused) {
				t.Errorf("Save over the refused journal: %v", err)
			}
			if data, _ := os.ReadFile(j.Path()); string(data) != tt.content {
				t.Errorf("the refused journal was written over: %s", data)
			}
			if fi, _ := os.Lstat(j.Path()); fi.Mode().Perm() != tt.mode {
				t.Errorf("the refused journal's mode changed to %v", fi.Mode())
			}
			if c, err := j.Reload(s); err != nil || c.Reloaded || c.Resumed {
				t.Errorf("Reload of the same refused file: %+v, %v", c, err)
			}

			// The operator removes it: journaling resumes.
			if err := os.Remove(j.Path()); err != nil {
				t.Fatal(err)
			}
			if c, err := j.Reload(s); err != nil || !c.Resumed || s.Len() != 1 {
				t.Fatalf("Reload after the removal: %+v, %v, %d grants", c, err, s.Len())
			}
			record(t, s, gitPush)
			if err := j.Save(s, testAsked); err != nil {
				t.Fatalf("Save after the removal: %v", err)
			}
			if got, want := onDisk(t, j), []rules.SessionGrant{deploy, gitPush}; !reflect.DeepEqual(got, want) {
				t.Errorf("journal %v, want %v", got, want)
			}
		})
	}
}

// A Save after the refused file is gone resumes by itself, without
// waiting for a Reload (a child never reloads).
func TestSaveResumesOnceTheRefusedFileIsGone(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	j, _ := Open(layout, Child, "s")
	writeJournal(t, layout, j, refusedJournals[0].content, 0o600)
	s := rules.NewSessionRules("")
	err := j.Load(s)
	if err == nil || !strings.Contains(err.Error(), "remove it: its asks go to the parent again") {
		t.Fatalf("Load = %v", err)
	}
	os.Remove(j.Path())
	record(t, s, gitPush)
	if err := j.Save(s, testAsked); err != nil {
		t.Fatalf("Save: %v", err)
	}
	if got := onDisk(t, j); !reflect.DeepEqual(got, []rules.SessionGrant{gitPush}) {
		t.Errorf("journal %v", got)
	}
}

// TestBadJournalIsNeverEdited: List and Revoke refuse a journal its owner
// did not write with an error naming the file, and write nothing.
func TestBadJournalIsNeverEdited(t *testing.T) {
	for _, tt := range refusedJournals {
		t.Run(tt.name, func(t *testing.T) {
			if tt.uid >= 0 && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			layout, j := journalWith(t, Broker, gitPush)
			writeJournal(t, layout, j, tt.content, tt.mode)
			if tt.uid >= 0 {
				if err := os.Chown(j.Path(), tt.uid, -1); err != nil {
					t.Fatal(err)
				}
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
		if err := os.WriteFile(target, []byte(journalDoc(Broker, entryDoc("bash", "git push *"))), 0o600); err != nil {
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
		s := rules.NewSessionRules("")
		if err := j.Load(s); !errors.Is(err, ErrRefused) {
			t.Errorf("Load through a symlink: %v", err)
		}
	})
}

// The journal courier writes is the one it reads: every entry round-trips.
func FuzzDecodeJournal(f *testing.F) {
	for _, tt := range refusedJournals {
		f.Add([]byte(tt.content))
	}
	f.Add([]byte(journalDoc(Broker, entryDoc("bash", "git push *"), entryDoc("path_write", "/w/*"))))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := decodeJournal(data, Broker, "s")
		if err != nil {
			return
		}
		out, err := encodeJournal(Broker, "s", entries)
		if err != nil {
			t.Fatalf("an accepted journal does not encode: %v", err)
		}
		back, err := decodeJournal(out, Broker, "s")
		if err != nil || len(back) != len(entries) {
			t.Fatalf("the journal written back is refused: %v\n%s", err, out)
		}
		if !bytes.Equal(out, mustEncode(t, back)) {
			t.Fatalf("not stable:\n%s", out)
		}
	})
}

func mustEncode(t *testing.T, entries []Entry) []byte {
	t.Helper()
	out, err := encodeJournal(Broker, "s", entries)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The review's finding 10: five whole-session answers of 64 grants of
// 4 KB made a 1.3 MB journal that the next start refused. Save now refuses
// to write what Load would refuse, and the grants stay in memory.
func TestSaveRefusesAnOversizeJournal(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	if err := layout.PrepareRoot(); err != nil {
		t.Fatal(err)
	}
	j, err := Open(layout, Broker, "s")
	if err != nil {
		t.Fatal(err)
	}
	s := rules.NewSessionRules("")
	var saveErr error
	for a := 0; a < 5 && saveErr == nil; a++ {
		var gs []rules.SessionGrant
		for i := 0; i < 64; i++ {
			gs = append(gs, rules.SessionGrant{Surface: "bash", Pattern: fmt.Sprintf("c%d_%d%s *", a, i, strings.Repeat("a", 4000))})
		}
		if _, err := s.Record(rules.WidthProven, gs...); err != nil {
			t.Fatal(err)
		}
		saveErr = j.Save(s, testAsked)
	}
	if !errors.Is(saveErr, ErrNotSaved) || !strings.Contains(saveErr.Error(), "cap") {
		t.Fatalf("save of an oversize journal: %v", saveErr)
	}
	if s.Len() == 0 {
		t.Error("the grants left memory")
	}
	again, err := Open(layout, Broker, "s")
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Load(rules.NewSessionRules("")); err != nil {
		t.Errorf("the journal on disk no longer loads: %v", err)
	}
}
