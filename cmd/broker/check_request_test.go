package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/check-request")

// TestCheckRequest runs broker check --request on request files as pi
// 25.x and pi 20.x children write them, and on files the broker would
// reject, and compares its exit status, stdout and stderr with
// testdata/check-request/<name>.golden (go test -update rewrites them).
// The 20.x cases show why the rules are not consulted and what the
// config would change; the malformed one names the file and the field.
func TestCheckRequest(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		// 25.x bash compounds: a floor turns the rules' allow into an
		// ask, which goes on to the link and the terminal; a unit the
		// rules deny denies the whole request at once.
		{"pi25-compound-floor", []string{"--config", "config.json", "--request", "pi25-compound-floor.json"}},
		{"pi25-compound-floor-json", []string{"--config", "config.json", "--request", "pi25-compound-floor.json", "--json"}},
		{"pi25-compound-deny", []string{"--config", "config.json", "--request", "pi25-compound-deny.json"}},
		// 20.x: not consulted, and the key that changes it for bash...
		{"pi20-bash", []string{"--config", "config.json", "--request", "pi20-bash.json"}},
		// ...which, set, matches the display value and says so.
		{"pi20-bash-legacy", []string{"--config", "legacy.json", "--request", "pi20-bash.json"}},
		{"pi20-bash-legacy-json", []string{"--config", "legacy.json", "--request", "pi20-bash.json", "--json"}},
		{"pi20-read-legacy", []string{"--config", "legacy.json", "--request", "pi20-read.json"}},
		// A malformed accessIntent is dropped: the request floors as a
		// 20.x one does.
		{"pi25-bad-intent", []string{"--config", "config.json", "--request", "pi25-bad-intent.json"}},
		// Rejected files: a required field of the wrong type, a symbolic
		// link, a missing file.
		{"malformed", []string{"--config", "config.json", "--request", "malformed.json"}},
		{"symlink", []string{"--config", "config.json", "--request", "link.json"}},
		{"missing", []string{"--config", "config.json", "--request", "absent.json"}},
		{"request-and-ask", []string{"--request", "pi20-bash.json", "--surface", "bash", "--value", "ls"}},
	}
	src, err := filepath.Abs(filepath.Join("testdata", "check-request"))
	if err != nil {
		t.Fatal(err)
	}
	// The files are copied into a directory of the test's own, 0600: the
	// broker refuses a config others may write, and a checkout's umask
	// may have made these group-writable.
	dir := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("pi20-bash.json", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), append([]string{"check"}, c.args...), nil, &stdout, &stderr)
			got := fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, stdout.String(), stderr.String())
			golden := filepath.Join(src, c.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("broker check %q:\n--- got\n%s\n--- want\n%s", c.args, got, want)
			}
		})
	}
}

// A request file another user owns is what a broker serving the
// isolation mode reads (serve --ask-group): check --request resolves it
// with its owner as the requester, so an agent's overrides are believed
// only for the uids its users list, as that broker would; the same file
// of this user is the same-uid mode, where the agent name is a claim.
func TestCheckRequestOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test gives the request file to another uid (61002)")
	}
	src, err := os.ReadFile(filepath.Join("testdata", "check-request", "pi25-compound-deny.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "config.json")
	// Explore may rm -rf where the global rules deny it, vouched for uid
	// 61003 only.
	cfg := `{"permission": {"*": "ask", "bash": {"git status *": "allow", "rm -rf *": "deny"}},
  "agents": {"Explore": {"permission": {"bash": {"rm -rf *": "allow"}}, "users": [61003]}}}`
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	req := filepath.Join(dir, "req.json")
	if err := os.WriteFile(req, src, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func() (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), []string{"check", "--config", config, "--request", req}, nil, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	// This user's file: the same-uid mode, the claim applies. (The
	// answer line, not "allow" anywhere: the rules listed hold both
	// actions whatever the answer.)
	if _, out := check(); !bytes.Contains([]byte(out), []byte("answer: allow")) || bytes.Contains([]byte(out), []byte("owner")) {
		t.Errorf("own file: want the claimed override's allow and no owner row:\n%s", out)
	}
	if err := os.Chown(req, 61002, 61002); err != nil {
		t.Fatal(err)
	}
	_, out := check()
	for _, want := range []string{"uid 61002", "not vouched", "answer: deny"} {
		if !bytes.Contains([]byte(out), []byte(want)) {
			t.Errorf("file of uid 61002: output lacks %q:\n%s", want, out)
		}
	}
}
