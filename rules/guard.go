package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// guard is the built-in self-approval rule: an ask whose facts target the
// protected tree (the mailbox, the agent directory) is denied, above every
// other rule. A subagent that could write into the mailbox could write its
// own approval; one that could write the agent directory could rewrite
// the rules that judge it.
type guard struct {
	home string
	// roots are the protected trees, cleaned, absolute, each also in its
	// symlink-resolved spelling.
	roots []string
	// spellings are the substrings that betray a protected tree in a
	// command line: each root, and `~/…`, `$HOME/…`, `${HOME}/…` for roots
	// under the home directory; spellingRoot[i] is the root spellings[i]
	// names.
	spellings    []string
	spellingRoot []string
}

// GuardReason is the start of the built-in rule's denial reason.
const GuardReason = "a subagent may not write its own approval"

func newGuard(home string, protected []string) (guard, error) {
	g := guard{home: home}
	add := func(root string) {
		for _, r := range g.roots {
			if r == root {
				return
			}
		}
		g.roots = append(g.roots, root)
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

// check denies q when its facts touch a protected tree: on path surfaces
// (and for any boundary value) when a value cleans to a path inside a
// root; elsewhere, and in every asking unit, when a value contains a
// root's spelling. The substring test is deliberately blunt: a command
// line is not parsed here, so it errs towards denying.
func (g *guard) check(q Query) (Resolution, bool) {
	if len(g.roots) == 0 {
		return Resolution{}, false
	}
	pathSurface := isPathSurface(q.Surface)
	for _, v := range q.MatchValues {
		if pathSurface {
			if root, ok := g.inside(v, q.Cwd); ok {
				return g.deny(q, v, root), true
			}
		} else if root, ok := g.mentions(v); ok {
			return g.deny(q, v, root), true
		}
	}
	if q.BoundaryValue != nil {
		if root, ok := g.inside(*q.BoundaryValue, q.Cwd); ok {
			return g.deny(q, *q.BoundaryValue, root), true
		}
	}
	for _, u := range q.AskingUnits {
		if root, ok := g.mentions(u.Command); ok {
			return g.deny(q, u.Command, root), true
		}
	}
	return Resolution{}, false
}

// inside reports whether path v, with `~` expanded and a relative path
// placed in cwd, lies in a protected root.
func (g *guard) inside(v, cwd string) (string, bool) {
	v = expandHome(v, g.home)
	if !filepath.IsAbs(v) {
		if !filepath.IsAbs(cwd) {
			return "", false
		}
		v = filepath.Join(cwd, v)
	}
	v = filepath.Clean(v)
	for _, r := range g.roots {
		if v == r || strings.HasPrefix(v, r) && (r == string(os.PathSeparator) || v[len(r)] == os.PathSeparator) {
			return r, true
		}
	}
	return "", false
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
	r := Rule{
		Surface: q.Surface,
		Pattern: root,
		Action:  Deny,
		Reason:  fmt.Sprintf("%s: %q targets %s, which holds the permission mailbox or the broker's configuration (courier built-in rule)", GuardReason, shorten(value, 200), root),
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
