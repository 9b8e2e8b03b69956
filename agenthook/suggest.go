package agenthook

import (
	"strings"

	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// Grants maps Claude Code's permission_suggestions to courier's suggested
// grants on surface: each allow rule whose tool maps to surface and whose
// content reads unambiguously as a courier pattern. Others are dropped,
// never guessed: a rule for the whole tool (no ruleContent), a path rule
// relative to a settings file (`/src/**`), a WebFetch domain rule. The
// broker admits only grants no wider than its own suggestion, and so does
// Admit before they are sent.
func Grants(suggestions []Suggestion, surface string) []wire.SuggestedGrant {
	var out []wire.SuggestedGrant
	for _, s := range suggestions {
		if s.Behavior != "allow" {
			continue
		}
		for _, r := range s.Rules {
			g, ok := grantOf(r)
			if ok && g.Surface == surface {
				out = append(out, g)
			}
		}
	}
	return out
}

// grantOf reads one suggested rule as a courier grant.
func grantOf(r SuggestedRule) (wire.SuggestedGrant, bool) {
	content := r.RuleContent
	switch r.ToolName {
	case "Bash":
		// Claude's legacy prefix form `git push:*` is `git push *`.
		if p, ok := strings.CutSuffix(content, ":*"); ok {
			content = p + " *"
		}
		return wire.SuggestedGrant{Surface: "bash", Pattern: content}, content != ""
	case "Read", "Write", "Edit", "MultiEdit", "NotebookEdit":
		surface := "path_write"
		if r.ToolName == "Read" {
			surface = "path_read"
		}
		// `//abs/**` is an absolute path and `~/x/**` one under the home
		// directory; `/x` is relative to a settings file and `x` to the
		// project, which the hook cannot know.
		var p string
		switch {
		case strings.HasPrefix(content, "//"):
			p = content[1:]
		case strings.HasPrefix(content, "~/"):
			p = content
		default:
			return wire.SuggestedGrant{}, false
		}
		if dir, ok := strings.CutSuffix(p, "/**"); ok {
			p = dir + "/*"
		}
		return wire.SuggestedGrant{Surface: surface, Pattern: p}, true
	}
	if v := mcpValues(r.ToolName); len(v) > 0 && content == "" {
		return wire.SuggestedGrant{Surface: SurfaceMCP, Pattern: v[0]}, true
	}
	return wire.SuggestedGrant{}, false
}

// admitSuggestions keeps of grants those the broker would admit for req
// (rules.AdmitGrants; home expands `~` in patterns as the broker's does),
// and sets them as req's suggestion when any is left; otherwise req keeps
// the default suggestion it was built with.
func admitSuggestions(home string, req *wire.Request, grants []wire.SuggestedGrant) {
	if len(grants) == 0 || req.AccessIntent == nil {
		return
	}
	admitted, _ := rules.AdmitGrants(home, rules.QueryFromIntent(req.AccessIntent), grants)
	if len(admitted) > 0 {
		req.SessionApproval = &wire.SessionApproval{Grants: admitted}
	}
}
