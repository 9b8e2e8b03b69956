package rules

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// The surface keys of a permission object. pi's surfaces are a fixed few
// (bash, mcp, skill, the path and external_directory families) plus any
// tool's name, and a surface key is itself a wildcard pattern; so courier
// cannot refuse every name it does not know without refusing an MCP or
// custom tool's. It refuses the names that are surely typos, since a
// misspelt surface silently drops its rules, its denies included
// (`path_wirte`), and notes the others once each (docs/CONFIG.md, "Surface
// names").

// knownSurfaces are the surface names courier and pi define: the gate
// surfaces and the tools of pi whose asks carry them.
var knownSurfaces = []string{
	"bash", "mcp", "skill",
	"path", "path_read", "path_write",
	"external_directory", "external_directory_read", "external_directory_write",
	"read", "write", "edit", "find", "grep", "ls",
}

// surfaceTypoDistance is how many edits away from a known surface an
// unknown name is taken for its typo: one for the short names (a custom
// tool may well be called one letter away from "edit"), two from the
// longer ones, where two slips still leave the name unmistakable.
func surfaceTypoDistance(known string) int {
	if utf8.RuneCountInString(known) <= 5 {
		return 1
	}
	return 2
}

// checkSurfaceName judges the surface key name written at off: nothing
// for a known surface or a wildcard pattern over surfaces; an error for a
// name that is a known surface but for letter case or a few edits; a
// warning for any other name, read as a tool's.
func (p *parser) checkSurfaceName(off int, path, name string) {
	if slices.Contains(knownSurfaces, name) || strings.ContainsAny(name, "*?") {
		return
	}
	if near := nearSurface(name); near != "" {
		msg := fmt.Sprintf("unknown surface: did you mean %q?", near)
		if strings.EqualFold(near, name) {
			msg = fmt.Sprintf("unknown surface: surface names are case-sensitive, did you mean %q?", near)
		}
		p.fail(off, path, msg+` (rules on a misspelt surface never apply; for a tool really named so, see "Surface names" in docs/CONFIG.md)`)
		return
	}
	p.warn(off, path, "not a surface courier knows: read as a tool's name (an MCP or custom tool), its rules match asks on a surface of exactly this name")
}

// nearSurface returns the known surface that name is a slip of, or "".
// Names of fewer than four characters are too short to call a slip of
// anything but letter case.
func nearSurface(name string) string {
	for _, k := range knownSurfaces {
		if strings.EqualFold(k, name) {
			return k
		}
	}
	if utf8.RuneCountInString(name) < 4 {
		return ""
	}
	lower := strings.ToLower(name)
	best, bestDist := "", -1
	for _, k := range knownSurfaces {
		d := editDistance(lower, k)
		if d <= surfaceTypoDistance(k) && (bestDist < 0 || d < bestDist) {
			best, bestDist = k, d
		}
	}
	return best
}
