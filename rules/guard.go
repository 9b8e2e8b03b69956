package rules

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// guard is the built-in self-approval rule: an ask whose facts target a
// protected tree (the mailbox, the agent directory, the broker's own
// files) is denied, above every other rule. A subagent that could write
// into the mailbox could write its own approval; one that could write the
// agent directory, the broker's config or its grants journal could
// rewrite the rules that judge it; one that could write the review log
// could hide what it did.
type guard struct {
	home string
	// mailbox is the first protected tree, cleaned: reading it is denied
	// even from a cwd inside it (see guard_words.go).
	mailbox [2]string
	// roots are the protected trees, cleaned, absolute, each also in its
	// symlink-resolved spelling; rootSegs are their segments.
	roots    []string
	rootSegs [][]string
	// spellings are the substrings that betray a protected tree in a
	// command line or a tool's input: each root, and `~/…`, `$HOME/…`,
	// `${HOME}/…` for roots under the home directory, and pi's agent
	// directory variable; spellingRoot[i] is the root spellings[i] names.
	spellings    []string
	spellingRoot []string
}

// GuardReason is the start of the built-in rule's denial reason.
const GuardReason = "a subagent may not write its own approval"

// agentDirVariable is pi's variable for the agent directory. A word that
// starts with it names the protected agent directory whatever its value,
// which the broker cannot know in the child's shell.
const agentDirVariable = "$PI_CODING_AGENT_DIR"

func newGuard(home string, protected []string) (guard, error) {
	g := guard{home: home}
	add := func(root string) {
		for _, r := range g.roots {
			if r == root {
				return
			}
		}
		g.roots = append(g.roots, root)
		g.rootSegs = append(g.rootSegs, strings.Split(root, "/"))
	}
	for _, p := range protected {
		if p == "" {
			continue
		}
		abs := expandHome(p, home)
		if !filepath.IsAbs(abs) {
			return guard{}, fmt.Errorf("protected path %q: not absolute", p)
		}
		abs = filepath.Clean(abs)
		if g.mailbox[0] == "" {
			g.mailbox = [2]string{abs, resolveExisting(abs)}
		}
		add(abs)
		add(resolveExisting(abs))
	}
	h := strings.TrimSuffix(filepath.Clean(home), "/")
	for _, r := range g.roots {
		spell := []string{r}
		if home != "" && h != "" && strings.HasPrefix(r, h+"/") {
			rel := r[len(h):]
			spell = append(spell, "~"+rel, "$HOME"+rel, "${HOME}"+rel)
		}
		for _, s := range spell {
			g.spellings = append(g.spellings, s)
			g.spellingRoot = append(g.spellingRoot, r)
		}
	}
	if len(g.roots) > 0 {
		for _, s := range []string{agentDirVariable, "${" + agentDirVariable[1:]} {
			g.spellings = append(g.spellings, s)
			g.spellingRoot = append(g.spellingRoot, agentDirVariable)
		}
	}
	return g, nil
}

// resolveExisting resolves symbolic links in the longest existing prefix
// of p (the mailbox may not exist yet) and appends the rest unchanged.
func resolveExisting(p string) string {
	rest := ""
	for dir := p; ; {
		if resolved, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(resolved, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// check denies q when its facts touch a protected tree:
//
//   - on path surfaces, when a match value or the boundary value, with `~`
//     expanded, a relative one placed in the requester's cwd, and cleaned,
//     lies in a root, or (holding a glob) could name a path in one;
//   - on bash, when any word of any unit does the same (see bashWords);
//   - on every other surface, when a path-like token of the value does;
//   - off path surfaces, and in every asking unit, when a value contains a
//     root's spelling: a blunt substring test that errs towards denying.
//
// lines are q's bash lines, split (nil off bash).
func (g *guard) check(q Query, lines []bashLine) (Resolution, bool) {
	if len(g.roots) == 0 {
		return Resolution{}, false
	}
	cwd := ""
	if path.IsAbs(q.Cwd) {
		cwd = path.Clean(q.Cwd)
	}
	pathSurface := isPathSurface(q.Surface)
	for _, v := range q.MatchValues {
		if pathSurface {
			if root, ok := g.pathValue(q.Surface, v, cwd); ok {
				return g.deny(q, v, root), true
			}
			continue
		}
		if root, ok := g.mentions(v); ok {
			return g.deny(q, v, root), true
		}
		if q.Surface != "bash" {
			if root, token, ok := g.toolInput(v, cwd); ok {
				return g.deny(q, token, root), true
			}
		}
	}
	if q.BoundaryValue != nil {
		if root, ok := g.pathValue(q.Surface, *q.BoundaryValue, cwd); ok {
			return g.deny(q, *q.BoundaryValue, root), true
		}
	}
	for _, u := range q.AskingUnits {
		if root, ok := g.mentions(u.Command); ok {
			return g.deny(q, u.Command, root), true
		}
	}
	if root, word, ok := g.bashWords(lines, cwd, false); ok {
		return g.deny(q, word, root), true
	}
	return Resolution{}, false
}

// checkMoves denies a bash ask that moves, removes or re-permissions an
// ancestor of a protected tree (`mv ~/.pi /tmp/p`, `rm -rf ~`), which
// would carry the tree away to where the guard no longer sees it. Resolve
// consults it after the rules, so that a config deny (`rm -rf ~*`) keeps
// its teaching reason.
func (g *guard) checkMoves(q Query, lines []bashLine) (Resolution, bool) {
	if len(g.roots) == 0 || len(lines) == 0 {
		return Resolution{}, false
	}
	cwd := ""
	if path.IsAbs(q.Cwd) {
		cwd = path.Clean(q.Cwd)
	}
	if root, word, ok := g.bashWords(lines, cwd, true); ok {
		return g.deny(q, word, root), true
	}
	return Resolution{}, false
}

// pathValue tests a path surface's value: as a word in a write position
// on a surface that writes, in a read position otherwise.
func (g *guard) pathValue(surface, v, cwd string) (string, bool) {
	var buf [1]string
	ds := dirSet{cwd: cwd, known: buf[:0]}
	if cwd != "" {
		ds.known = append(ds.known, cwd)
	}
	return g.candidate(v, &ds, pathWrites(surface), false)
}

// pathWrites reports whether a path surface may write.
func pathWrites(surface string) bool {
	switch surface {
	case "read", "find", "grep", "ls", "path_read", "external_directory_read":
		return false
	}
	return true
}

// hit reports the root that p, absolute and cleaned, lies in. With
// mutating, a p that is a root's ancestor hits too: moving or removing it
// moves or removes the root. A p holding a wildcard hits when it could
// name such a path.
func (g *guard) hit(p string, mutating bool) (string, bool) {
	if hasWildcard(p) || braceList(p) >= 0 {
		return g.globHit(cleanPattern(p), mutating)
	}
	for _, r := range g.roots {
		if within(p, r) || mutating && within(r, p) {
			return r, true
		}
	}
	return "", false
}

// within reports whether p is r or lies inside it; both are clean.
func within(p, r string) bool {
	return p == r || strings.HasPrefix(p, r) && (r == "/" || p[len(r)] == '/')
}

func (g *guard) mentions(v string) (string, bool) {
	for i, s := range g.spellings {
		if strings.Contains(v, s) {
			return g.spellingRoot[i], true
		}
	}
	return "", false
}

func (g *guard) deny(q Query, value, root string) Resolution {
	reason := fmt.Sprintf("%s: %q targets %s, which holds the permission mailbox or the broker's configuration (courier built-in rule)", GuardReason, shorten(value, 200), root)
	if root == unknownTarget {
		reason = fmt.Sprintf("%s: %q writes to %s, which could be the permission mailbox or the broker's configuration (courier built-in rule)", GuardReason, shorten(value, 200), root)
	}
	if root == unknownHome {
		reason = fmt.Sprintf("%s: %q names %s, which could hold the permission mailbox or the broker's configuration (courier built-in rule)", GuardReason, shorten(value, 200), root)
	}
	r := Rule{
		Surface: q.Surface,
		Pattern: root,
		Action:  Deny,
		Reason:  reason,
		Origin:  OriginBuiltin,
	}
	pattern := root
	return Resolution{
		Action:           Deny,
		Reason:           r.Reason,
		Surface:          q.Surface,
		Origin:           OriginBuiltin,
		Pattern:          &pattern,
		Rule:             r,
		EvaluatedSurface: q.Surface,
		Value:            value,
	}
}

// shorten cuts s to at most n characters, marking the cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
