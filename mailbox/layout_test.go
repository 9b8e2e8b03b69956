package mailbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/seed6639df8c/courier/wire"
)

func TestResolveRoot(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, explicit, env, want string
	}{
		{"default", "", "", filepath.Join(home, ".pi/agent/sessions/permission-forwarding")},
		{"env", "", "/opt/agent", "/opt/agent/sessions/permission-forwarding"},
		{"env tilde", "", "~/alt", filepath.Join(home, "alt/sessions/permission-forwarding")},
		{"env bare tilde", "", "~", filepath.Join(home, "sessions/permission-forwarding")},
		{"env tilde user is literal", "", "~bob/x", filepath.Join(cwd, "~bob/x/sessions/permission-forwarding")},
		{"env relative made absolute", "", "rel", filepath.Join(cwd, "rel/sessions/permission-forwarding")},
		{"explicit wins", "/srv/mail", "/opt/agent", "/srv/mail"},
		{"explicit relative", "box", "", filepath.Join(cwd, "box")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvAgentDir, tt.env)
			got, err := ResolveRoot(tt.explicit)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ResolveRoot(%q) with %s=%q = %q, want %q", tt.explicit, EnvAgentDir, tt.env, got, tt.want)
			}
		})
	}
}

func TestLayoutPaths(t *testing.T) {
	l := Layout{Root: "/r"}
	check := func(what, got string, err error, want string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	got, err := l.SessionDir(" a b ")
	check("SessionDir", got, err, "/r/sessions/a%20b")
	got, err = l.RequestsDir("a/b")
	check("RequestsDir", got, err, "/r/sessions/a%2Fb/requests")
	got, err = l.ResponsesDir("日本")
	check("ResponsesDir", got, err, "/r/sessions/%E6%97%A5%E6%9C%AC/responses")
	got, err = l.RequestPath("p", "perm-1")
	check("RequestPath", got, err, "/r/sessions/p/requests/perm-1.json")
	got, err = l.ResponsePath("p", "1796031854191-i6uznf2b-3580")
	check("ResponsePath", got, err, "/r/sessions/p/responses/1796031854191-i6uznf2b-3580.json")
	got, err = l.HeartbeatPath("a?b")
	check("HeartbeatPath", got, err, "/r/serving/a%3Fb.json")
	check("TempDir", l.TempDir(), nil, "/r/tmp")
	check("ServingDir", l.ServingDir(), nil, "/r/serving")
}

func TestLayoutRefusesBadIDs(t *testing.T) {
	l := Layout{Root: "/r"}
	for _, id := range []string{"", "../x", "a/b", "a b", "x\x00", "é"} {
		if p, err := l.ResponsePath("p", id); !errors.Is(err, wire.ErrInvalidID) {
			t.Errorf("ResponsePath(p, %q) = %q, %v; want ErrInvalidID", id, p, err)
		}
		if p, err := l.RequestPath("p", id); !errors.Is(err, wire.ErrInvalidID) {
			t.Errorf("RequestPath(p, %q) = %q, %v; want ErrInvalidID", id, p, err)
		}
	}
	for _, s := range []string{"", "unknown", "..", "\xff"} {
		if p, err := l.ResponsePath(s, "id"); !errors.Is(err, ErrInvalidSessionID) {
			t.Errorf("ResponsePath(%q, id) = %q, %v; want ErrInvalidSessionID", s, p, err)
		}
		if p, err := l.HeartbeatPath(s); !errors.Is(err, ErrInvalidSessionID) {
			t.Errorf("HeartbeatPath(%q) = %q, %v; want ErrInvalidSessionID", s, p, err)
		}
	}
}

func TestIsMailName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"perm-1.json", true},
		{"1796031854191-i6uznf2b-3580.json", true},
		{"odd name.json", true}, // delivered; the consumer refuses the id
		{".json", false},
		{".hidden.json", false},
		{"perm-1.json.4242.1757000000000.tmp", false}, // pi's temp name
		{".perm-1.json8675309", false},                // renameio's temp name
		{"perm-1.JSON", false},
		{"perm-1", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsMailName(tt.name); got != tt.want {
			t.Errorf("IsMailName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestRequestIDFromName(t *testing.T) {
	if id, err := RequestIDFromName("perm-1.json"); err != nil || id != "perm-1" {
		t.Errorf("RequestIDFromName(perm-1.json) = %q, %v", id, err)
	}
	for _, name := range []string{"odd name.json", "x.tmp", ".x.json", "é.json"} {
		if id, err := RequestIDFromName(name); !errors.Is(err, wire.ErrInvalidID) {
			t.Errorf("RequestIDFromName(%q) = %q, %v; want ErrInvalidID", name, id, err)
		}
	}
}

func TestEnsureInboxModes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	l := Layout{Root: root}
	old := setUmask(0o077 | 0o200) // even a umask that strips owner write
	err := l.EnsureInbox("s")
	setUmask(old)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{root, l.SessionsDir(), filepath.Join(l.SessionsDir(), "s"), filepath.Join(l.SessionsDir(), "s", "requests"), filepath.Join(l.SessionsDir(), "s", "responses")} {
		assertMode(t, dir, os.ModeDir|0o700)
	}
}

func TestEnsureInboxKeepsExistingModes(t *testing.T) {
	// A pi 20.x tree: 0755 everywhere. Reading it is fine; loosening or
	// tightening it is not ours to do.
	root := t.TempDir()
	l := Layout{Root: root}
	session := filepath.Join(root, "sessions", "s")
	if err := os.MkdirAll(filepath.Join(session, "requests"), 0o755); err != nil {
		t.Fatal(err)
	}
	chmodTree(t, root, 0o755)
	if err := l.EnsureInbox("s"); err != nil {
		t.Fatal(err)
	}
	assertMode(t, filepath.Join(session, "requests"), os.ModeDir|0o755)
	assertMode(t, session, os.ModeDir|0o755)
	assertMode(t, filepath.Join(session, "responses"), os.ModeDir|0o700)
}

func TestEnsureInboxRefusesAFileInTheWay(t *testing.T) {
	root := t.TempDir()
	l := Layout{Root: root}
	if err := os.MkdirAll(filepath.Join(root, "sessions"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sessions", "s"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := l.EnsureInbox("s"); err == nil {
		t.Fatal("EnsureInbox succeeded with a file where the session directory belongs")
	}
}
