package denylist

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/chain"
)

func TestAuthorize(t *testing.T) {
	a, err := New([]Rule{
		{Pattern: regexp.MustCompile(`^git push .*--force`), Reason: "Force pushes rewrite shared history; push to a new branch instead.", Surfaces: []string{"bash"}},
		{Pattern: regexp.MustCompile(`(^|/)\.env$`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	unit := func(cmd string) chain.Evidence {
		return chain.Evidence{Surface: "bash", Value: "npm test && " + cmd, Access: &chain.AccessFacts{
			Surface: "bash", MatchValues: []string{"npm test"}, AskingUnits: []chain.AskingUnit{{Command: cmd}}}}
	}
	b := "/repo/.env"
	for _, tc := range []struct {
		name string
		ev   chain.Evidence
		want chain.Kind
		in   string
	}{
		{"force push in an asking unit", unit("git push origin main --force"), chain.Deny, "Force pushes"},
		{"plain push", unit("git push origin main"), chain.Defer, ""},
		{"force push on another surface", chain.Evidence{Surface: "write", Value: "git push x --force"}, chain.Defer, ""},
		{"boundary path", chain.Evidence{Surface: "read", Access: &chain.AccessFacts{Surface: "path_read", MatchValues: []string{"./.env"}, BoundaryValue: &b}}, chain.Deny, "deny-list refuses"},
		{"display value only (pi 20.x)", chain.Evidence{Surface: "read", Value: "config/.env"}, chain.Deny, "/(^|/)\\.env$/"},
		{"nothing", chain.Evidence{}, chain.Defer, ""},
	} {
		v, err := a.Authorize(t.Context(), tc.ev)
		if err != nil || v.Kind != tc.want || !strings.Contains(v.Reason, tc.in) {
			t.Errorf("%s: %+v %v", tc.name, v, err)
		}
	}
}

func TestNeverAllows(t *testing.T) {
	a, _ := New([]Rule{{Pattern: regexp.MustCompile(`x`)}})
	for _, v := range []string{"", "x", "y"} {
		if got, _ := a.Authorize(t.Context(), chain.Evidence{Value: v}); got.Kind == chain.Allow {
			t.Errorf("%q allowed", v)
		}
	}
}

func TestParseRules(t *testing.T) {
	rules, err := ParseRules([]byte(`{"rules": [{"pattern": "rm -rf /", "reason": " no ", "surfaces": ["bash"]}]}`))
	if err != nil || len(rules) != 1 || rules[0].Reason != "no" || rules[0].Surfaces[0] != "bash" {
		t.Fatalf("%+v %v", rules, err)
	}
	for _, bad := range []string{`{"rules": [{"pattern": "("}]}`, `{"rules": [{"pattern": ""}]}`, `{"rulez": []}`, `[`} {
		if _, err := ParseRules([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if _, err := New(nil); !errors.Is(err, ErrNoRules) {
		t.Errorf("New(nil): %v", err)
	}
}
