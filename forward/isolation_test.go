package forward

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// The uids of the isolation tests: the broker's user, and a third user.
// Neither needs to exist: root gives files to any uid.
const (
	testBrokerUID = 61001
	testOtherUID  = 61002
)

// needRoot skips a test that gives files to other uids.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test gives the mailbox tree to a broker uid (61001) of its own, as a broker running as its own user would own it")
	}
}

// isolatedTree makes the isolation tree a broker of uid testBrokerUID
// serving session "parent" would have (its inbox only when inbox), and
// returns its root. The tree is made as a root broker would make it, then
// given to testBrokerUID.
func isolatedTree(t *testing.T, inbox bool) string {
	t.Helper()
	needRoot(t)
	root := filepath.Join(t.TempDir(), "root")
	broker := mailbox.Layout{Root: root, Isolation: &mailbox.Isolation{BrokerUID: 0, GID: 0}}
	if err := broker.PrepareIsolated(); err != nil {
		t.Fatal(err)
	}
	if inbox {
		if err := broker.EnsureInbox("parent"); err != nil {
			t.Fatal(err)
		}
	}
	chownTree(t, root, testBrokerUID)
	return root
}

// chownTree gives everything under root to uid.
func chownTree(t *testing.T, root string, uid int) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, -1)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isolatedLayout is a child's view of the tree at root: the isolation
// mode with testBrokerUID as the broker's user.
func isolatedLayout(root string) mailbox.Layout {
	return mailbox.Layout{Root: root, Isolation: &mailbox.Isolation{BrokerUID: testBrokerUID, GID: -1}}
}

// isolatedClient is newClient in an isolation tree (see isolatedTree).
func isolatedClient(t *testing.T, inbox bool) (*Client, wire.Request) {
	t.Helper()
	c, req := newClient(t)
	c.Layout = isolatedLayout(isolatedTree(t, inbox))
	// A wait that should end in milliseconds ends in seconds when it does
	// not: a regression fails, it does not hang.
	c.Timeout = 10 * time.Second
	return c, req
}

// answerAs publishes resp as the answer to the request id, owned by uid,
// atomically (staged in tmp/, given to uid, then renamed into place), as
// a writer of that uid would.
func answerAs(t *testing.T, l mailbox.Layout, id string, resp wire.Response, uid int) {
	t.Helper()
	data, err := wire.EncodeResponse(resp)
	if err != nil {
		t.Error(err)
		return
	}
	path, _ := l.ResponsePath("parent", id)
	staged := filepath.Join(l.TempDir(), "answer-"+id+"-"+time.Now().Format("150405.000000000"))
	if err := os.WriteFile(staged, data, 0o644); err != nil {
		t.Error(err)
		return
	}
	if err := errors.Join(os.Chown(staged, uid, -1), os.Chmod(staged, 0o644), os.Rename(staged, path)); err != nil {
		t.Error(err)
	}
}

// boundTo binds resp to the request id as it is on disk: a writer that
// watches requests/ can bind its answer as well as the broker does.
func boundTo(t *testing.T, l mailbox.Layout, id string, resp wire.Response) wire.Response {
	t.Helper()
	reqPath, _ := l.RequestPath("parent", id)
	data, err := os.ReadFile(reqPath)
	if err != nil {
		t.Error(err)
	}
	return resp.Bind(id, wire.RequestDigest(data))
}

// The attack of issue 18: a process that watches requests/ writes a
// correctly bound approval before the broker answers. In the isolation
// mode only a file the broker's user owns is an answer: a plant of the
// asker's own uid, or of a third user, is refused, and the child waits
// for the broker's own answer (here a denial) written over it.
func TestIsolatedChildRefusesAnAnswerItsBrokerDidNotWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owner int
	}{
		{"the asker's own uid", os.Geteuid()},
		{"a third user", testOtherUID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, req := isolatedClient(t, true)
			refused := make(chan error, 4)
			c.OnWarning = func(err error) { refused <- err }
			serveWith(t, c, func(id string) {
				answerAs(t, c.Layout, id, boundTo(t, c.Layout, id, response(true)), tc.owner)
				select {
				case err := <-refused:
					if !errors.Is(err, mailbox.ErrWrongOwner) {
						t.Errorf("refused the plant with %v, want a wrong owner", err)
					}
				case <-time.After(5 * time.Second):
					t.Error("the plant was not refused within 5 s")
				}
				answerAs(t, c.Layout, id, boundTo(t, c.Layout, id, response(false)), testBrokerUID)
			})
			d := c.Forward(t.Context(), req)
			if d.Approved() || d.Unavailable() {
				t.Fatalf("decision = %+v, want the broker's denial", d)
			}
		})
	}
}

// The broker's answer, owned by the broker's user, is the answer: the
// child removes its request (sticky requests/ lets it) and leaves the
// answer, which only the broker's user may remove.
func TestIsolatedChildTakesTheBrokersAnswer(t *testing.T) {
	for _, pollFirst := range []time.Duration{0, OneShotPollFirst} {
		c, req := isolatedClient(t, true)
		c.PollFirst = pollFirst
		serveWith(t, c, func(id string) {
			answerAs(t, c.Layout, id, boundTo(t, c.Layout, id, response(true)), testBrokerUID)
		})
		d := c.Forward(t.Context(), req)
		if !d.Approved() {
			t.Fatalf("PollFirst %s: decision = %+v, want the broker's approval", pollFirst, d)
		}
		reqPath, _ := c.Layout.RequestPath("parent", req.ID)
		respPath, _ := c.Layout.ResponsePath("parent", req.ID)
		if _, err := os.Lstat(reqPath); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("PollFirst %s: the request is still there (%v)", pollFirst, err)
		}
		if _, err := os.Lstat(respPath); err != nil {
			t.Errorf("PollFirst %s: the child removed the broker's answer: %v", pollFirst, err)
		}
	}
}

// In the isolation mode only the broker's user creates an inbox: a
// missing one (or a missing requests/) is a parent that is not serving,
// at once, with the mailbox's reason on the warning channel, and the
// child creates nothing in the broker's tree.
func TestIsolatedMissingInboxIsNotServing(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pollFirst time.Duration
		remove    string // under sessions/parent; "" is no inbox at all
	}{
		{"no inbox, watch first", 0, ""},
		{"no inbox, poll first", OneShotPollFirst, ""},
		{"no requests/", 0, "requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, req := isolatedClient(t, tc.remove != "")
			c.PollFirst = tc.pollFirst
			session, _ := c.Layout.SessionDir("parent")
			if tc.remove != "" {
				if err := os.Remove(filepath.Join(session, tc.remove)); err != nil {
					t.Fatal(err)
				}
			}
			var warnings []error
			c.OnWarning = func(err error) { warnings = append(warnings, err) }
			start := time.Now()
			d := c.Forward(t.Context(), req)
			if !d.Unavailable() || d.DenialReason != "Session 'parent' is not serving forwarded permission requests" {
				t.Fatalf("decision = %+v, want not serving", d)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("took %s to give up, want at once (no wait for a grace)", took)
			}
			if len(warnings) == 0 || !errors.Is(warnings[0], mailbox.ErrIsolation) || !strings.Contains(warnings[0].Error(), "only the broker's user") {
				t.Errorf("warnings = %v, want the missing inbox named", warnings)
			}
			if _, err := os.Lstat(filepath.Join(session, "requests")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the child created the broker's requests/ (%v)", err)
			}
		})
	}
}
