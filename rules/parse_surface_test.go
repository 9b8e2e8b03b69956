package rules

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// A surface key that is a slip of a known surface is an error with "did
// you mean" and its place (issue 16: "path_wirte" dropped its denies
// without a word); a name courier does not know is a tool's, read with a
// notice; known surfaces and wildcard keys pass silently.
func TestSurfaceNames(t *testing.T) {
	const toolNote = "not a surface courier knows: read as a tool's name (an MCP or custom tool), its rules match asks on a surface of exactly this name"
	slip := func(at, path, want string) string {
		return "c.json:" + at + ": " + path + `: unknown surface: did you mean "` + want + `"? (rules on a misspelt surface never apply; for a tool really named so, see "Surface names" in docs/CONFIG.md)`
	}
	tests := []struct {
		name        string
		doc         string
		errs, warns []string
	}{
		{
			name: "the issue's typo",
			doc:  `{"permission": {"path_wirte": {"~/.ssh/*": "deny"}}}`,
			errs: []string{slip("1:17", "permission.path_wirte", "path_write")},
		},
		{
			name: "every known surface, and patterns over surfaces",
			doc:  `{"permission": {"bash": "ask", "mcp": "ask", "skill": "ask", "path": "ask", "path_read": "ask", "path_write": "ask", "external_directory": "ask", "external_directory_read": "ask", "external_directory_write": "ask", "read": "ask", "write": "ask", "edit": "ask", "find": "ask", "grep": "ask", "ls": "ask", "mcp_*": "ask", "path_wr?te": "ask"}}`,
		},
		{
			name: "swaps, slips and a dash",
			doc:  `{"permission": {"bahs": "allow", "raed": "deny", "path-write": "deny", "external_directroy_read": "deny"}}`,
			errs: []string{
				slip("1:17", "permission.bahs", "bash"),
				slip("1:34", "permission.raed", "read"),
				`c.json:1:50: permission["path-write"]: unknown surface: did you mean "path_write"? (rules on a misspelt surface never apply; for a tool really named so, see "Surface names" in docs/CONFIG.md)`,
				slip("1:72", "permission.external_directroy_read", "external_directory_read"),
			},
		},
		{
			name: "letter case",
			doc:  `{"permission": {"Bash": {"rm *": "deny"}}}`,
			errs: []string{`c.json:1:17: permission.Bash: unknown surface: surface names are case-sensitive, did you mean "bash"? (rules on a misspelt surface never apply; for a tool really named so, see "Surface names" in docs/CONFIG.md)`},
		},
		{
			name: "in an agent's permission object",
			doc:  `{"permission": {}, "agents": {"Explore": {"permission": {"path_wirte": "deny"}}}}`,
			errs: []string{slip("1:58", "agents.Explore.permission.path_wirte", "path_write")},
		},
		{
			// Two edits from "bash", but short names take one: a tool
			// called "task" is a tool's name, not a typo.
			name:  "tools courier does not know are a notice each",
			doc:   `{"permission": {"task": "ask", "web_search": "allow", "subagent": "ask", "lsp": "ask"}}`,
			warns: []string{"c.json:1:17: permission.task: " + toolNote, "c.json:1:32: permission.web_search: " + toolNote, "c.json:1:55: permission.subagent: " + toolNote, "c.json:1:74: permission.lsp: " + toolNote},
		},
		{
			name:  "errors and notices together",
			doc:   `{"permission": {"path_wirte": "deny", "deploy": "ask"}}`,
			errs:  []string{slip("1:17", "permission.path_wirte", "path_write")},
			warns: []string{"c.json:1:39: permission.deploy: " + toolNote},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("c.json", []byte(tt.doc))
			var errs, warns []string
			var ce *ConfigError
			switch {
			case errors.As(err, &ce):
				for _, p := range ce.Problems {
					errs = append(errs, p.String())
				}
				for _, w := range ce.Warnings {
					warns = append(warns, w.String())
				}
			case err != nil:
				t.Fatal(err)
			default:
				for _, w := range cfg.Warnings {
					warns = append(warns, w.String())
				}
			}
			if !slices.Equal(errs, tt.errs) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(tt.errs, "\n"))
			}
			if !slices.Equal(warns, tt.warns) {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warns, "\n"), strings.Join(tt.warns, "\n"))
			}
		})
	}
}

// Every known surface is its own, and no two are one slip apart, so the
// typo rule can never refuse a surface courier reads.
func TestKnownSurfacesAreNotSlipsOfEachOther(t *testing.T) {
	for _, s := range knownSurfaces {
		if got := nearSurface(s); got != s {
			t.Errorf("nearSurface(%q) = %q, want itself", s, got)
		}
	}
}
