package agenthook

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seed6639df8c/courier/forward"
)

// pathAsks are the asks on a path surface for p as a tool may read it:
// one ask per place p can name, every one of which must be allowed. A
// tool can read p in more than one way, and the adapter cannot tell which
// the tool uses:
//
//   - relative to the event's cwd, with `..` taken lexically (Node's
//     path.resolve, Claude Code) or after following the links before it
//     (the kernel, a tool that does not normalise);
//   - `~/x` under the home directory (Claude Code expands it) or as a
//     directory named `~` in cwd (Codex's patch paths do not).
//
// Each place is asked for with its links resolved to where a write would
// land, even where the file does not exist yet (a new file in a linked
// directory, a dangling link): that is the boundary value the broker's
// rules must allow. An ask on the place as spelled alone could be allowed
// by a rule for the project while the write lands elsewhere.
func pathAsks(base forward.Ask, surface, p, tool string) ([]forward.Ask, error) {
	raws := []string{p}
	if !filepath.IsAbs(p) {
		raws[0] = base.Cwd + "/" + p
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok || p == "~" {
		if home, err := os.UserHomeDir(); err == nil && home != "" {
			raws = append(raws, home+"/"+rest)
		}
	}
	var asks []forward.Ask
	add := func(value, canonical string) {
		if slices.ContainsFunc(asks, func(a forward.Ask) bool { return a.Value == value && a.Boundary == canonical }) {
			return
		}
		a := base
		a.Surface, a.Value, a.Tool, a.Boundary = surface, value, tool, canonical
		a.Match = []string{canonical}
		asks = append(asks, a)
	}
	for _, raw := range raws {
		lexical := filepath.Clean(raw)
		canonical, err := forward.ResolvePath(lexical)
		if err != nil {
			return nil, err
		}
		add(lexical, canonical)
		// The kernel's reading: a `..` after a link climbs from the link's
		// target, not from the link.
		physical, err := forward.ResolvePath(raw)
		if err != nil {
			return nil, err
		}
		if physical != canonical {
			add(physical, physical)
		}
	}
	return asks, nil
}
