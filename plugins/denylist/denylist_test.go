package denylist

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/authorizer"
)

func TestAuthorize(t *testing.T) {
	a, err := New([]Rule{
		{Pattern: regexp.MustCompile(`^git push .*--force`), Reason: "Force pushes rewrite shared history; push to a new branch instead.", Surfaces: []string{"bash"}},
		{Pattern: regexp.MustCompile(`(^|/)\.env$`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	unit := func(cmd string) authorizer.Evidence {
		return authorizer.Evidence{Surface: "bash", Value: "npm test && " + cmd, Access: &authorizer.AccessFacts{
			Surface: "bash", MatchValues: []string{"npm test"}, AskingUnits: []authorizer.AskingUnit{{Command: cmd}}}}
	}
	b := "/repo/.env"
	for _, tc := range []struct {
		name string
		ev   authorizer.Evidence
		want authorizer.VerdictKind
		in   string
	}{
		{"force push in an asking unit", unit("git push origin main --force"), authorizer.Deny, "Force pushes"},
		{"plain push", unit("git push origin main"), authorizer.Defer, ""},
		{"force push on another surface", authorizer.Evidence{Surface: "write", Value: "git push x --force"}, authorizer.Defer, ""},
		{"boundary path", authorizer.Evidence{Surface: "read", Access: &authorizer.AccessFacts{Surface: "path_read", MatchValues: []string{"./.env"}, BoundaryValue: &b}}, authorizer.Deny, "deny-list refuses"},
		{"display value only (pi 20.x)", authorizer.Evidence{Surface: "read", Value: "config/.env"}, authorizer.Deny, "/(^|/)\\.env$/"},
		{"nothing", authorizer.Evidence{}, authorizer.Defer, ""},
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
		if got, _ := a.Authorize(t.Context(), authorizer.Evidence{Value: v}); got.Kind == authorizer.Allow {
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
