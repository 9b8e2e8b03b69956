package forward

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// forSession is a parent's answer "yes, for this subagent only".
var forSession = decision.Decision{State: decision.StateApprovedForSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}}

// grantAsks are an ask that was approved for the session and a later one
// its grant ("npm run dev*") matches.
func grantAsks(t *testing.T) (first, later wire.Request) {
	t.Helper()
	first, err1 := Ask{Session: "child", Agent: "Explore", Surface: "bash", Value: "npm run dev", Cwd: "/w"}.Request("perm-1", "parent", 1)
	later, err2 := Ask{Session: "child", Agent: "Explore", Surface: "bash", Value: "npm run dev --port 3000", Cwd: "/w"}.Request("perm-2", "parent", 2)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return first, later
}

// vouchAs records the grants of req, approved for the session "child",
// into the vouched journal of this process's uid, as a broker would
// (here a root broker), and gives the journal to owner. It returns the
// journal's path.
func vouchAs(t *testing.T, root string, req wire.Request, owner int) string {
	t.Helper()
	broker := mailbox.Layout{Root: root, Isolation: &mailbox.Isolation{BrokerUID: 0, GID: 0}}
	j, err := grants.OpenVouched(broker, os.Geteuid(), "child")
	if err != nil {
		t.Fatal(err)
	}
	gs := make([]rules.SessionGrant, len(req.SessionApproval.Grants))
	for i, g := range req.SessionApproval.Grants {
		gs[i] = rules.SessionGrant{Surface: g.Surface, Pattern: g.Pattern}
	}
	if _, err := j.Vouch(rules.WidthProven, gs, grants.AskedFor(req, forSession, time.Now())); err != nil {
		t.Fatal(err)
	}
	chownTree(t, filepath.Dir(j.Path()), owner)
	return j.Path()
}

// In the isolation mode a child's grants are those its broker vouched
// for: a vouched journal the broker's user owns is loaded, and its grant
// answers the child's next ask locally. A grants journal the asker's uid
// wrote (the attack of issue 18: a subagent granting itself `bash: *`) is
// not, whether it claims to be vouched or is the child's own store of the
// same-uid mode.
func TestIsolatedChildGrants(t *testing.T) {
	for _, tc := range []struct {
		name    string
		plant   func(t *testing.T, root string, first wire.Request)
		wantErr error // from OpenLocalGrants
		grants  bool  // the later ask resolves locally
	}{
		{"vouched by the broker's user", func(t *testing.T, root string, first wire.Request) {
			vouchAs(t, root, first, testBrokerUID)
		}, nil, true},
		{"vouched journal of the asker's own uid", func(t *testing.T, root string, first wire.Request) {
			vouchAs(t, root, first, os.Geteuid())
		}, grants.ErrRefused, false},
		{"the asker's own journal, as the same-uid mode keeps it", func(t *testing.T, root string, first wire.Request) {
			own, err := OpenLocalGrants(mailbox.Layout{Root: root}, "child", "/home/u")
			if err != nil {
				t.Fatal(err)
			}
			if err := own.Record(first, forSession); err != nil {
				t.Fatal(err)
			}
		}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := isolatedTree(t, true)
			first, later := grantAsks(t)
			tc.plant(t, root, first)
			g, err := OpenLocalGrants(isolatedLayout(root), "child", "/home/u")
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("OpenLocalGrants: %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d, ok := g.Resolve(later)
			if ok != tc.grants || (ok && !d.Approved()) {
				t.Fatalf("Resolve = %+v, %v; want resolved %v", d, ok, tc.grants)
			}
		})
	}
}

// In the isolation mode the child writes no grant journal: the broker
// recorded the grants before it answered, into the vouched journal only
// its user writes.
func TestIsolatedChildRecordsNoGrants(t *testing.T) {
	root := isolatedTree(t, true)
	first, _ := grantAsks(t)
	g, err := OpenLocalGrants(isolatedLayout(root), "child", "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Record(first, forSession); err != nil {
		t.Fatal(err)
	}
	own, _ := grants.Open(mailbox.Layout{Root: root}, grants.Child, "child")
	vouched, _ := grants.OpenVouched(isolatedLayout(root), os.Geteuid(), "child")
	for _, path := range []string{filepath.Dir(own.Path()), filepath.Dir(vouched.Path())} {
		if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the child wrote %s (%v)", path, err)
		}
	}
}
