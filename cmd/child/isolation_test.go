package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
)

// The uids of the isolation tests: the broker's user, and another. Neither
// needs to exist: root gives files to any uid.
const (
	testBrokerUID = 61001
	testOtherUID  = 61002
)

// isolatedRoot is the tree of a broker running as uid testBrokerUID (no
// session's inbox yet): made as a root broker makes it, then given to
// testBrokerUID. It skips the test when not root.
func isolatedRoot(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test gives the mailbox tree to a broker uid (61001) of its own, as a broker running as its own user would own it")
	}
	root := filepath.Join(t.TempDir(), "root")
	broker := mailbox.Layout{Root: root, Isolation: &mailbox.Isolation{BrokerUID: 0, GID: 0}}
	if err := broker.PrepareIsolated(); err != nil {
		t.Fatal(err)
	}
	chownTree(t, root, testBrokerUID)
	return root
}

// chownTree gives everything under dir to uid.
func chownTree(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, -1)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// env is a getenv of the variables in kv ("K=V").
func env(kv ...string) func(string) string {
	return func(k string) string {
		for _, e := range kv {
			if name, v, _ := strings.Cut(e, "="); name == k {
				return v
			}
		}
		return ""
	}
}

const hookEvent = `{"session_id": "b648dec7", "cwd": "/work/proj", "agent_id": "a8f2c355829900d95", "agent_type": "general-purpose", "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "git status --short"}}`

// A child is told the broker's user (--broker-user, else
// $COURIER_BROKER_USER); without either a root another user owns is
// refused, never taken as that user's broker (a root in /tmp or /dev/shm
// may be anyone's). Told, a root another user owns is then refused, naming the root, its owner and the user
// expected, so a tree swapped under the child's path cannot pass for the
// broker's. child ask refuses as a configuration error (exit 2); child hook
// as a set-up nobody can answer through (no decision, exit 0; a deny with
// --unavailable deny). In the mode, a session without an inbox is a parent
// that is not serving (exit 3), and the child creates none.
func TestBrokerUser(t *testing.T) {
	ask := []string{"ask", "--parent", "p", "--session", "s", "--surface", "bash", "--value", "ls", "--timeout", "10s"}
	hook := []string{"hook", "claude-code", "--parent", "p", "--timeout", "10s"}
	// {root} stands for the mailbox root.
	mismatch := []string{"mailbox root {root} is owned by uid 61001", "expected the broker's user (uid 61002)"}
	notServing := []string{"the inbox {root}/sessions/p/requests is missing, and only the broker's user (uid 61001) creates it", "is not serving"}
	tests := []struct {
		name     string
		args     []string
		env      []string
		stdin    string
		wantExit int
		wantOut  string   // in stdout; "" is no output
		want     []string // in stderr, {root} replaced
	}{
		{"ask, the root's owner, not pinned", ask, nil, "", exitUsage, "", []string{"mailbox root {root} is owned by uid 61001, not by this user", "--broker-user 61001"}},
		{"ask, --broker-user by uid", append(ask, "--broker-user", "61001"), nil, "", exitUnavailable, `"unavailable":true`, notServing},
		{"ask, --broker-user of another user", append(ask, "--broker-user", "61002"), nil, "", exitUsage, "", append(mismatch, "--broker-user")},
		{"ask, $COURIER_BROKER_USER of another user", ask, []string{envBrokerUser + "=61002"}, "", exitUsage, "", append(mismatch, "$"+envBrokerUser)},
		{"ask, --broker-user wins over the environment", append(ask, "--broker-user", "61001"), []string{envBrokerUser + "=61002"}, "", exitUnavailable, `"unavailable":true`, notServing},
		{"ask, this process's own user by name", append(ask, "--broker-user", "root"), nil, "", exitUsage, "", []string{"mailbox root {root} is owned by uid 61001", "this process's own"}},
		{"ask, no such user", append(ask, "--broker-user", "courier-no-such-user"), nil, "", exitUsage, "", []string{`no user "courier-no-such-user"`}},
		{"hook, --broker-user of another user", append(hook, "--broker-user", "61002"), nil, hookEvent, 0, "", append(mismatch, "no decision")},
		{"hook, --broker-user of another user, deny", append(hook, "--broker-user", "61002", "--unavailable", "deny"), nil, hookEvent, 0, `"behavior":"deny"`, mismatch},
		{"hook, the root's owner, not pinned", hook, nil, hookEvent, 0, "", []string{"is owned by uid 61001, not by this user", "no decision"}},
		{"hook, --broker-user by uid", append(hook, "--broker-user", "61001"), nil, hookEvent, 0, "", []string{"is not serving", "no decision"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := isolatedRoot(t)
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			code := run(ctx, append(tt.args, "--root", root), env(tt.env...), strings.NewReader(tt.stdin), &stdout, &stderr)
			if code != tt.wantExit {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.wantExit, stderr.String())
			}
			if tt.wantOut == "" && stdout.Len() > 0 || !strings.Contains(stdout.String(), tt.wantOut) {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.wantOut)
			}
			for _, w := range tt.want {
				w = strings.ReplaceAll(w, "{root}", root)
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not name %q:\n%s", w, stderr.String())
				}
			}
			if _, err := os.Lstat(filepath.Join(root, "sessions", "p")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the child created the broker's inbox (%v)", err)
			}
		})
	}
}

// vouch records the grant "npm run dev*" for child session s of this
// process's uid as a (root) broker would, and gives the journal to owner.
func vouch(t *testing.T, root string, owner int) {
	t.Helper()
	broker := mailbox.Layout{Root: root, Isolation: &mailbox.Isolation{BrokerUID: 0, GID: 0}}
	j, err := grants.OpenVouched(broker, os.Geteuid(), "s")
	if err != nil {
		t.Fatal(err)
	}
	req, err := forward.Ask{Session: "s", Agent: "Explore", Surface: "bash", Value: "npm run dev", Cwd: "/w"}.Request("perm-1", "p", 1)
	if err != nil {
		t.Fatal(err)
	}
	d := decision.Decision{State: decision.StateApprovedForSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}}
	if _, err := j.Vouch(rules.WidthProven, []rules.SessionGrant{{Surface: "bash", Pattern: "npm run dev*"}}, grants.AskedFor(req, d, time.Now())); err != nil {
		t.Fatal(err)
	}
	chownTree(t, filepath.Dir(j.Path()), owner)
}

// child grants in the isolation mode: list reads the journal the broker
// keeps for this uid, refusing one the broker's user does not own (the
// asker's own: a subagent writing itself "vouched" grants); revoke is the
// broker's, and says how (exit 2).
func TestGrantsIsolated(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		owner    int // of the vouched journal
		wantExit int
		wantOut  string
		want     string // in stderr
	}{
		{"list, vouched by the broker", []string{"list"}, testBrokerUID, 0, `"npm run dev*"`, ""},
		{"list, the asker's own", []string{"list"}, 0, exitUsage, "", "owned by uid 0, expected 61001"},
		{"revoke", []string{"revoke", "npm run dev*"}, testBrokerUID, exitUsage, "", "revoke them as the broker's user: broker grants revoke --root "},
		{"revoke --all", []string{"revoke", "--all"}, testBrokerUID, exitUsage, "", "--vouched-uid 0 --session s --all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := isolatedRoot(t)
			vouch(t, root, tt.owner)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append(append([]string{"grants"}, tt.args...), "--root", root, "--session", "s", "--broker-user", "61001"), env(), nil, &stdout, &stderr)
			if code != tt.wantExit {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.wantExit, stderr.String())
			}
			if tt.wantOut == "" && stdout.Len() > 0 || !strings.Contains(stdout.String(), tt.wantOut) {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.wantOut)
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr does not say %q:\n%s", tt.want, stderr.String())
			}
		})
	}
}
