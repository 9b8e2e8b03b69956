package forward

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

func TestLocalGrants(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	g, err := OpenLocalGrants(layout, "child", "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	first, _ := Ask{Session: "child", Agent: "Explore", Surface: "bash", Value: "npm run dev", Cwd: "/w"}.Request("perm-1", "parent", 1)
	if _, ok := g.Resolve(first); ok {
		t.Fatal("resolved with no grants")
	}
	// A plain approval records nothing; approved_for_session records.
	if err := g.Record(first, decision.Allow(provenance.User{Via: provenance.ViaDialog})); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Resolve(first); ok {
		t.Fatal("a one-off approval was recorded")
	}
	if err := g.Record(first, decision.Decision{State: decision.StateApprovedForSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}}); err != nil {
		t.Fatal(err)
	}
	// A fresh process of the same child session sees the grant.
	again, err := OpenLocalGrants(layout, "child", "/home/u")
	if err != nil {
		t.Fatal(err)
	}
	later, _ := Ask{Session: "child", Agent: "Explore", Surface: "bash", Value: "npm run dev --port 3000", Cwd: "/w"}.Request("perm-2", "parent", 2)
	d, ok := again.Resolve(later)
	if !ok || !d.Approved() {
		t.Fatalf("the recorded grant did not answer: %+v %v", d, ok)
	}
	if sa, isSA := d.DecidedBy.(provenance.SessionApproval); !isSA || *sa.Pattern != "npm run dev*" {
		t.Errorf("decidedBy = %#v", d.DecidedBy)
	}
	// Another child session has its own grants.
	sibling, _ := OpenLocalGrants(layout, "sibling", "/home/u")
	if _, ok := sibling.Resolve(later); ok {
		t.Error("a sibling inherited the grant")
	}
	// A different command still goes to the parent.
	other, _ := Ask{Session: "child", Agent: "Explore", Surface: "bash", Value: "npm publish", Cwd: "/w"}.Request("perm-3", "parent", 3)
	if _, ok := again.Resolve(other); ok {
		t.Error("a grant for npm run dev answered npm publish")
	}
}

func TestLocalGrantsNeverApproveTheMailbox(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	g, _ := OpenLocalGrants(layout, "child", "")
	broad, _ := Ask{Session: "child", Agent: "a", Surface: "path_write", Value: "/x", Grants: []wire.SuggestedGrant{{Surface: "path_write", Pattern: "*"}}}.Request("perm-1", "p", 1)
	if err := g.Record(broad, decision.Decision{State: decision.StateApprovedForSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}}); err != nil {
		t.Fatal(err)
	}
	target, _ := Ask{Session: "child", Agent: "a", Surface: "path_write", Value: layout.Root + "/sessions/p/responses/perm-9.json"}.Request("perm-2", "p", 2)
	if d, ok := g.Resolve(target); ok {
		t.Fatalf("a session grant approved writing into the mailbox: %+v", d)
	}
}

// Opening a session's grants builds nothing while it has no journal, but
// a journal that is there is read at once, and one that cannot be trusted
// (here a symlink planted at its path) is refused at once, as before the
// policy was built lazily.
func TestLocalGrantsRefuseAPlantedJournalAtOpen(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	g, err := OpenLocalGrants(layout, "child", "")
	if err != nil || g.policy != nil {
		t.Fatalf("no journal: policy %v, err %v; want none and no error", g.policy, err)
	}
	j, err := grants.Open(layout, grants.Child, "child")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(j.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", j.Path()); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLocalGrants(layout, "child", ""); err == nil {
		t.Fatal("a symlinked journal was opened without an error")
	}
}
