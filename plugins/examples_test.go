package plugins

import (
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
)

// The example plugins as an operator would chain them: the deny-list
// first, then the read-only allow-list.
func TestExamplePlugins(t *testing.T) {
	deny := rules.AuthorizerLink{
		Name: "denylist", Path: denylistBin, SHA256: fileSum(denylistBin),
		Args:    []string{"--deny", `^rm -rf`, "--deny", `(^|/)\.env$`, "--reason", "Deleting trees is not delegated; ask the user."},
		Timeout: spec("").Timeout, OnFailure: rules.LinkFailDeny, Mode: rules.LinkEnforce,
	}
	ro := rules.AuthorizerLink{
		Name: "readonly", Path: readonlyBin, SHA256: fileSum(readonlyBin), Args: []string{"--git"},
		Timeout: spec("").Timeout, OnFailure: rules.LinkFailDefer, Mode: rules.LinkEnforce,
	}
	h := load(t, Options{}, deny, ro)
	if len(h.errs) > 0 {
		t.Fatal(h.errs)
	}
	d, ok := h.ask("rm -rf build")
	if !ok || d.State != decision.StateDeniedWithReason || d.DenialReason != "Deleting trees is not delegated; ask the user." {
		t.Fatalf("rm -rf: %+v %v", d, ok)
	}
	if a, _ := d.DecidedBy.(provenance.Authorizer); a.Name != "denylist" {
		t.Errorf("decided by %#v", d.DecidedBy)
	}
	d, ok = h.ask("git status --short")
	if !ok || !d.Approved() || d.DecidedBy.(provenance.Authorizer).Name != "readonly" {
		t.Fatalf("git status: %+v %v", d, ok)
	}
	if d, ok := h.ask("make install"); ok {
		t.Errorf("make install decided: %+v", d)
	}
	// a read on a path surface: the read-only link does not allow it, and
	// the deny-list still denies a secret
	if d, ok := h.askOn("path_read", "cat notes.txt"); ok {
		t.Errorf("path_read decided: %+v", d)
	}
	d, ok = h.askOn("read", "config/.env")
	if !ok || !strings.Contains(d.DenialReason, "ask the user") {
		t.Errorf(".env: %+v %v", d, ok)
	}
}

// A deny-list started without rules exits before the handshake: the link
// reports a start failure and denies by its failure policy.
func TestDenylistWithoutRulesFailsClosed(t *testing.T) {
	deny := rules.AuthorizerLink{
		Name: "denylist", Path: denylistBin, SHA256: fileSum(denylistBin),
		Timeout: spec("").Timeout, OnFailure: rules.LinkFailDeny, Mode: rules.LinkEnforce,
	}
	h := load(t, Options{}, deny)
	if len(h.errs) != 1 || !strings.Contains(h.errs[0].Error(), "no rules") {
		t.Fatalf("load errors %v, want the plugin's own complaint", h.errs)
	}
	d, ok := h.ask("ls")
	wantNoAllow(t, d, ok)
	if !ok {
		t.Error("not decided")
	}
}
