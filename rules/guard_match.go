package rules

import (
	"os/user"
	"path"
	"strings"
	"sync"

	"github.com/seed6639df8c/courier/bashunits"
)

// The guard's path patterns. A word becomes an absolute pattern before it
// is matched: `~`, `~+`, `~user`, `$HOME` and `${HOME}` are expanded where
// the broker can know them; every other expansion (and `~-`, an unknown
// user's `~user`, `/proc/<pid>/cwd`, `/dev/fd/N`) becomes anyPath, a
// wildcard that may hold `/`; a brace list becomes `*`, or anyPath when it
// holds `/`. Then the pattern is cleaned (cleanPattern) and matched
// against each protected root (reaches). In a binary whose user lookup
// reads only /etc/passwd, a word that starts with an unknown user's
// `~user` hits before all that, in any position (unknownUserHome).

// anyPath stands, in a guard pattern, for any string, `/` included. A
// line holding a NUL byte is never parsed, so no word holds one.
const anyPath = '\x00'

// unknownTarget is what the guard names as the target of a word it cannot
// place: one that is nothing but an expansion, in a write position.
const unknownTarget = "a path computed at run time"

// resolveWord turns one word (in bashunits' form, expansions bracketed by
// bashunits.Mark) into a pattern: absolute when it starts with `/`,
// unknown-prefixed when it starts with anyPath, relative otherwise.
func (g *guard) resolveWord(w string) string {
	if strings.HasPrefix(w, "~") {
		w = g.tilde(w)
	}
	if !strings.Contains(w, bashunits.Mark) {
		if w != "" && (w[0] == '$' || w[0] == '`') {
			// An unparsed word (a tool's input, an unparseable line): its
			// expansions are not marked; a leading one hides the prefix.
			if h := expandHome(w, g.home); h != w {
				return h
			}
			return string(anyPath) + w
		}
		return w
	}
	var b strings.Builder
	for i, part := range strings.Split(w, bashunits.Mark) {
		switch {
		case i%2 == 0:
			b.WriteString(part)
		case g.home != "" && (part == "$HOME" || part == "${HOME}"):
			b.WriteString(strings.TrimSuffix(g.home, "/"))
		default:
			b.WriteByte(anyPath)
		}
	}
	if b.Len() == 0 {
		return "/" // `$HOME` alone, when the home is `/`
	}
	return b.String()
}

// tilde expands a word's leading tilde prefix: `~` and `~/…` to the home
// directory, `~+` to the current directory (a relative word), `~user` to that user's home; `~-` (the previous
// directory) and an unknown user's home may be anywhere.
func (g *guard) tilde(w string) string {
	prefix, rest, _ := strings.Cut(w, "/")
	if rest != "" || strings.HasSuffix(w, "/") {
		rest = "/" + rest
	}
	var dir string
	switch prefix {
	case "~":
		dir = g.home
	case "~+":
		// The cwd when the word runs, after any cd: a relative word.
		return "." + rest
	case "~-":
	default:
		dir = lookupHome(prefix[1:])
	}
	if dir == "" {
		return string(anyPath) + rest
	}
	if p := strings.TrimSuffix(dir, "/") + rest; p != "" {
		return p
	}
	return "/" // a home of `/` (system users have it), nothing after it
}

// userHomes caches os/user lookups: a Policy judges many asks, and the
// password database rarely changes while a broker runs.
var userHomes sync.Map

// lookupUserHome finds a user's home in the password database; a
// variable so that tests can stand in for the database.
var lookupUserHome = func(name string) (string, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return "", err
	}
	return u.HomeDir, nil
}

// lookupHome returns name's home directory, or "" when it is unknown.
func lookupHome(name string) string {
	if name == "" || strings.ContainsAny(name, string(anyPath)+"*?[") {
		return ""
	}
	if h, ok := userHomes.Load(name); ok {
		return h.(string)
	}
	home, err := lookupUserHome(name)
	if err != nil {
		home = ""
	}
	userHomes.Store(name, home)
	return home
}

// unknownHome is what the guard names as the target of a word that
// starts with an unknown user's `~name`.
const unknownHome = "the home directory of an unknown user"

// strictUnknownHomes says an unknown user's `~name` may still be a home
// the user's shell knows: true in a binary whose os/user reads only
// /etc/passwd (built without cgo, as the child is: docs/decisions/0021).
// A variable so that tests can judge both ways.
var strictUnknownHomes = !userLookupViaNSS

// unknownUserHome reports whether w starts with a `~name` tilde prefix
// (not `~`, `~+` or `~-`) whose home this binary cannot know but the
// shell may (strictUnknownHomes). Such a home may be the one that holds a
// protected tree, so the word hits in every position, as one starting
// with pi's agent directory variable does: read as an unknown prefix it
// would hit only in a write position, and a read there would pass where
// the same user's home, known, is denied. Where the lookup asks NSS, an
// unknown user is unknown to the shell too, which leaves the word as it
// is (a relative word), and tilde's unknown prefix stays the stricter
// reading.
func unknownUserHome(w string) bool {
	if !strictUnknownHomes || !strings.HasPrefix(w, "~") {
		return false
	}
	prefix, _, _ := strings.Cut(w, "/")
	switch prefix {
	case "~", "~+", "~-":
		return false
	}
	return lookupHome(prefix[1:]) == ""
}

// cleanPattern cleans an absolute pattern lexically as path.Clean does,
// except around wildcards: `..` after a segment holding anyPath leaves
// anyPath (the parent of an unknown directory is unknown). It strips the
// prefixes that lead back to `/` (`/proc/self/root`, `/proc/<pid>/root`,
// `/proc/thread-self/root`) and turns those that lead to an unknown
// directory (`/proc/<pid>/cwd`, `/proc/<pid>/fd/N`, `/dev/fd/N`) into
// anyPath. A brace list becomes `*`, or anyPath when it holds `/`.
func cleanPattern(p string) string {
	p = braces(p)
	var out []string
	for _, seg := range strings.Split(p, "/") {
		switch {
		case seg == "" || seg == ".":
			continue
		case seg == "..":
			if n := len(out); n > 0 {
				if strings.IndexByte(out[n-1], anyPath) >= 0 {
					out[n-1] = string(anyPath)
				} else {
					out = out[:n-1]
				}
			}
			continue
		}
		out = append(out, seg)
		switch {
		case len(out) == 3 && out[0] == "proc" && procSelf(out[1]) && out[2] == "root":
			out = out[:0]
		case len(out) == 3 && out[0] == "proc" && procSelf(out[1]) && out[2] == "cwd",
			len(out) == 4 && out[0] == "proc" && procSelf(out[1]) && out[2] == "fd",
			len(out) == 3 && out[0] == "dev" && out[1] == "fd":
			out = append(out[:0], string(anyPath))
		}
	}
	if len(out) > 0 && out[0] == string(anyPath) {
		return strings.Join(out, "/") // an unknown prefix: see unknowable
	}
	return "/" + strings.Join(out, "/")
}

// procSelf reports whether seg names a process under /proc: self,
// thread-self, a pid, or a wildcard that could be one.
func procSelf(seg string) bool {
	if seg == "self" || seg == "thread-self" || strings.ContainsAny(seg, string(anyPath)+"*?[") {
		return true
	}
	for i := 0; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return false
		}
	}
	return seg != ""
}

// braces replaces each brace list in p by a wildcard.
func braces(p string) string {
	for i := braceList(p); i >= 0; i = braceList(p) {
		end := i + strings.IndexByte(p[i:], '}')
		w := "*"
		if strings.IndexByte(p[i:end], '/') >= 0 {
			w = string(anyPath)
		}
		p = p[:i] + w + p[end+1:]
	}
	return p
}

// unknowable reports whether the pattern's location is unknown: it starts
// with anyPath.
func unknowable(p string) bool {
	return p != "" && p[0] == anyPath
}

// hasWildcard reports whether p holds a glob or anyPath.
func hasWildcard(p string) bool {
	return strings.ContainsAny(p, "*?[") || strings.IndexByte(p, anyPath) >= 0
}

// reaches reports whether the absolute pattern p could name root or a path
// inside it, or, with ancestors, one of root's ancestors. `*`, `?` and
// `[…]` match within a segment, as bash's globs do; anyPath and `**` match
// across segments.
func reaches(p, root string, ancestors bool) bool {
	toks := tokens(p)
	n := len(toks)
	cur := closure(toks, []int{0})
	for i := 0; i < len(root); i++ {
		c := root[i]
		if ancestors && c == '/' && i > 0 && slicesContains(cur, n) {
			return true
		}
		cur = step(toks, cur, c)
		if len(cur) == 0 {
			return false
		}
		if ancestors && i == 0 && slicesContains(cur, n) {
			return true // the pattern names `/`
		}
	}
	for _, s := range cur {
		if s == n || toks[s].accepts('/') {
			return true
		}
	}
	return false
}

// token is one element of a guard pattern.
type token struct {
	kind  byte // 'l' literal, '?' one character, '*' a run within a segment, 'a' anything, '[' a class
	c     byte
	class string
}

func (t token) accepts(c byte) bool {
	switch t.kind {
	case 'l':
		return t.c == c
	case 'a':
		return true
	case '?', '*':
		return c != '/'
	case '[':
		if c == '/' {
			return false
		}
		if c >= 0x80 {
			return true // a byte of a multi-byte character: err towards matching
		}
		ok, err := path.Match(t.class, string(c))
		return ok || err != nil
	}
	return false
}

func tokens(p string) []token {
	var out []token
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == anyPath:
			out = append(out, token{kind: 'a'})
		case c == '*':
			if i+1 < len(p) && p[i+1] == '*' {
				out = append(out, token{kind: 'a'})
				i++
				continue
			}
			out = append(out, token{kind: '*'})
		case c == '?':
			out = append(out, token{kind: '?'})
		case c == '[':
			end := strings.IndexByte(p[i+1:], ']')
			if end > 0 && p[i+1] == ']' {
				if e2 := strings.IndexByte(p[i+2:], ']'); e2 >= 0 {
					end = e2 + 1
				}
			}
			if end < 0 || strings.IndexByte(p[i:i+1+end], '/') >= 0 {
				out = append(out, token{kind: 'l', c: c}) // malformed: literal to bash
				continue
			}
			out = append(out, token{kind: '[', class: p[i : i+2+end]})
			i += 1 + end
		default:
			out = append(out, token{kind: 'l', c: c})
		}
	}
	return out
}

// closure adds to states those reachable without reading: past a `*` or
// anyPath that matches nothing.
func closure(toks []token, states []int) []int {
	for i := 0; i < len(states); i++ {
		s := states[i]
		if s < len(toks) && (toks[s].kind == '*' || toks[s].kind == 'a') && !slicesContains(states, s+1) {
			states = append(states, s+1)
		}
	}
	return states
}

func step(toks []token, states []int, c byte) []int {
	var next []int
	for _, s := range states {
		if s == len(toks) || !toks[s].accepts(c) {
			continue
		}
		to := s + 1
		if k := toks[s].kind; k == '*' || k == 'a' {
			to = s
		}
		if !slicesContains(next, to) {
			next = append(next, to)
		}
	}
	return closure(toks, next)
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// entersRoot reports the root a relative pattern, placed in an unknown
// directory outside every root, could lead into: its first segments
// match a root's last ones (`.pi/agent/x` from the home directory).
func (g *guard) entersRoot(rel string) (string, bool) {
	ws := strings.Split(rel, "/")
	for len(ws) > 0 && (ws[0] == ".." || ws[0] == "." || ws[0] == "") {
		ws = ws[1:]
	}
	for k, rs := range g.rootSegs {
		for n := 1; n <= len(ws) && n < len(rs); n++ {
			ok := true
			for i := 0; i < n && ok; i++ {
				ok = strings.IndexByte(ws[i], anyPath) >= 0 || segmentMatch(ws[i], rs[len(rs)-n+i])
			}
			if ok {
				return g.roots[k], true
			}
		}
	}
	return "", false
}
