package rules

import (
	"errors"
	"strings"
	"testing"
)

// standInPasswd replaces the password database for one test: names maps a
// user to a home; every other name is unknown. viaNSS says whether the
// shell knows no more users than that (a cgo build's lookup) or may know
// more (a build without cgo, as the child's). Not parallel: the lookup
// and its cache are the package's.
func standInPasswd(t *testing.T, viaNSS bool, names map[string]string) {
	t.Helper()
	saved, savedStrict := lookupUserHome, strictUnknownHomes
	strictUnknownHomes = !viaNSS
	lookupUserHome = func(name string) (string, error) {
		if h, ok := names[name]; ok {
			return h, nil
		}
		return "", errors.New("unknown user " + name)
	}
	userHomes.Clear()
	t.Cleanup(func() {
		lookupUserHome, strictUnknownHomes = saved, savedStrict
		userHomes.Clear()
	})
}

// TestGuardUnknownUserHomeNeverAllowsMore: where the lookup reads only
// /etc/passwd, a `~name` it does not know must be judged at least as
// strictly as any home it could have been. The child is built without
// cgo (decision 0021), so a user known only to NSS (LDAP, sssd) is
// unknown there; in a read position such a word would pass the guard
// where the same user's known home, holding the mailbox, was denied.
func TestGuardUnknownUserHomeNeverAllowsMore(t *testing.T) {
	lines := []struct{ surface, value string }{
		{"bash", "cat ~ada/.pi/agent/sessions/permission-forwarding/sessions/p/responses/perm-1.json"},
		{"bash", "ls ~ada/.pi/agent/sessions/permission-forwarding"},
		{"bash", "cd ~ada/.pi/agent/sessions/permission-forwarding && cat sessions/p/requests/x.json"},
		{"bash", "cp evil.json ~ada/.pi/agent/settings.json"},
		{"bash", "grep -r token ~ada"},
		{"bash", "cat ~ada/notes.txt"},
		{"bash", "tar -C ~ada -xf x.tar"},
		{"path_read", "~ada/.pi/agent/sessions/permission-forwarding/sessions/p/responses/perm-1.json"},
		{"path_read", "~ada/notes.txt"},
		{"path_write", "~ada/.pi/agent/settings.json"},
		{"mcp_fs_read", `{"path":"~ada/.pi/agent/sessions/permission-forwarding/x"}`},
	}
	// The homes ada could have: the one holding the protected trees, one
	// of its ancestors, and one beside them.
	homes := []string{testHome, "/home", "/", agentDir, "/srv/ada"}
	judge := func(t *testing.T, names map[string]string) []Resolution {
		standInPasswd(t, false, names)
		p := reviewPolicy(t)
		out := make([]Resolution, len(lines))
		for i, l := range lines {
			out[i] = p.Resolve(Query{Surface: l.surface, MatchValues: []string{l.value}, Cwd: "/work/proj"})
		}
		return out
	}
	unknown := judge(t, nil)
	for _, home := range homes {
		known := judge(t, map[string]string{"ada": home})
		for i, l := range lines {
			if guardDenies(known[i]) && !guardDenies(unknown[i]) {
				t.Errorf("%s %q: denied when ada's home is %s, but %v (%s) when ada is unknown", l.surface, l.value, home, unknown[i].Action, unknown[i].Reason)
			}
		}
	}
	for i, l := range lines {
		if !guardDenies(unknown[i]) {
			t.Errorf("%s %q with ada unknown: got %v, want the built-in deny", l.surface, l.value, unknown[i])
		} else if !strings.Contains(unknown[i].Reason, unknownHome) {
			t.Errorf("%s %q with ada unknown: reason %q does not name %q", l.surface, l.value, unknown[i].Reason, unknownHome)
		}
	}
}

// TestGuardKnownUserHome: a known user's home is placed where it is, so
// that reading elsewhere in it stays possible, and `~`, `~+`, `~-` are not
// user names.
func TestGuardKnownUserHome(t *testing.T) {
	for _, viaNSS := range []bool{false, true} {
		standInPasswd(t, viaNSS, map[string]string{"bob": "/home/bob", "ada": testHome})
		p := reviewPolicy(t)
		for _, tt := range []struct {
			line string
			deny bool
		}{
			{"cat ~bob/notes.txt", false},
			{"cat ~ada/notes.txt", false},
			{"cat ~ada/.pi/agent/sessions/permission-forwarding/x", true},
			{"cat ~/notes.txt", false},
			{"cat ~+/notes.txt", false},
			{"cat ~-/notes.txt", false},
			{"cp x ~nobody-here/notes.txt", true},
			// Unknown to NSS, unknown to the shell: a word it leaves
			// as it is, here a grep pattern.
			{"cat ~nobody-here/notes.txt", !viaNSS},
			{"grep -r '~deprecated' .", !viaNSS},
		} {
			d := p.Resolve(Query{Surface: "bash", MatchValues: []string{tt.line}, Cwd: "/work/proj"})
			if guardDenies(d) != tt.deny {
				t.Errorf("lookup via NSS %v, %q: got %v %q, want the guard's deny %v", viaNSS, tt.line, d.Action, d.Reason, tt.deny)
			}
		}
	}
}

// TestGuardHomeIsRoot: a home of `/` (systemd-network's, in Debian's
// /etc/passwd) used to leave `~name` and `$HOME` an empty word, and the
// guard indexed it: `cat ~systemd-network` panicked in Resolve.
func TestGuardHomeIsRoot(t *testing.T) {
	standInPasswd(t, false, map[string]string{"sys": "/"})
	for _, home := range []string{testHome, "/"} {
		p := mustPolicy(t, `{"permission": {"*": "ask", "bash": "allow", "path": "allow"}}`, Options{Home: home, Protected: []string{mailboxRoot}})
		for _, q := range []Query{
			{Surface: "bash", MatchValues: []string{"cat ~sys"}},
			{Surface: "bash", MatchValues: []string{"ls ~sys/"}},
			{Surface: "bash", MatchValues: []string{"ls ~"}},
			{Surface: "bash", MatchValues: []string{`ls "$HOME"`}},
			{Surface: "path_read", MatchValues: []string{"~sys"}},
			{Surface: "path_read", MatchValues: []string{"~"}},
		} {
			if d := p.Resolve(q); guardDenies(d) {
				t.Errorf("home %s, %v %q: got the guard's deny %q, want none (reading / lists no protected file)", home, q.Surface, q.MatchValues, d.Reason)
			}
		}
		if d := p.Resolve(Query{Surface: "bash", MatchValues: []string{"rm -rf ~sys/home"}}); !guardDenies(d) {
			t.Errorf("home %s, rm -rf ~sys/home: got %v, want the guard's deny (it removes the mailbox's ancestor)", home, d)
		}
	}
}
