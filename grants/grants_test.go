package grants

import (
	"os"
	"reflect"
	"testing"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
)

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
	if err := j.Save(s); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(j.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("journal file: %v %v", fi, err)
	}
	back := rules.NewSessionRules("")
	if err := j.Load(back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Grants(), s.Grants()) {
		t.Errorf("reloaded %v, want %v", back.Grants(), s.Grants())
	}
}

func TestJournalRefusesBadFiles(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	j, _ := Open(layout, Child, "c")
	if err := layout.EnsureDir(j.Path()[:len(j.Path())-len("/c.json")]); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		"not json":     `{"version":1,"grants":[`,
		"wrong shape":  `{"version":1,"grants":[{"surface":"bash"}]}`,
		"wildcard":     `{"version":1,"grants":[{"surface":"*","pattern":"*"}]}`,
		"case dup key": `{"version":1,"grants":[],"Grants":[]}`,
	} {
		if err := os.WriteFile(j.Path(), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		s := rules.NewSessionRules("")
		if err := j.Load(s); err == nil || s.Len() != 0 {
			t.Errorf("%s: Load = %v with %d grants, want an error and nothing applied", name, err, s.Len())
		}
	}
	os.Remove(j.Path())
	if err := os.Symlink("/etc/passwd", j.Path()); err != nil {
		t.Fatal(err)
	}
	if err := j.Load(rules.NewSessionRules("")); err == nil {
		t.Error("a symlinked journal was read")
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
