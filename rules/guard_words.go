package rules

import (
	"path"
	"strings"

	"github.com/seed6639df8c/courier/bashunits"
)

// The guard on a command line or a tool's input: what a unit or a token
// names is not known until the shell (or the tool) runs, so the guard
// reads every word the way that errs towards denying. A word is tested
// whole, and after its first `=` each `:`-separated piece (`of=…`,
// `--target-directory=…`, `PATH=a:b`). It becomes a pattern first (see
// guard_match.go): tildes and `$HOME` expanded, a word starting with pi's
// agent directory variable a hit outright, every other expansion a
// wildcard that may hold `/`. A relative word is placed in the
// requester's cwd and in every directory the line changes to with cd; the
// result is cleaned. A pattern hits when it could name a path in a
// protected tree.
//
// Some words cannot be placed: one that starts with an expansion
// (`$DEST`, `$(cat p)`), a relative one after a cd the broker cannot
// follow (`cd $d`, CDPATH, `cd -`), a relative one when the cwd is
// unknown. Such a word hits only in a write position — a redirection
// target, an operand of a command that writes (see guard_writers.go) —
// so that `cat $F` stays usable and `cp x $F` does not (a relative word
// without a cwd also hits when its leading segments could enter a tree
// from outside: `.pi/agent/x`). The command name is never a relative path
// (unless it holds `/`); a bare name in a directory that only names a
// broker file there (`grep courier.json`) and a relative word placed in
// a cwd inside a protected tree hit only in a write position, except in
// the mailbox (the first protected tree), whose files are secrets too.

// dirSet is where the relative words of a line may be relative to.
type dirSet struct {
	// cwd is the requester's absolute cwd, or "".
	cwd string
	// known are the absolute patterns (the cwd and cd targets).
	known []string
	// unknown says a cd went somewhere the broker cannot know.
	unknown bool
}

// bashWords tests every word of every unit of lines, and returns the
// root hit and the word that hit it. With ancestors it tests only the
// units of mutatingCommands, for a root's ancestor.
func (g *guard) bashWords(lines []bashLine, cwd string, ancestors bool) (root, word string, ok bool) {
	if len(lines) == 0 {
		return "", "", false
	}
	var buf [4]string
	ds := dirSet{cwd: cwd, known: buf[:0]}
	if cwd != "" {
		ds.known = append(ds.known, cwd)
	}
	for _, l := range lines {
		for i := range l.units {
			g.cdTarget(&l.units[i], &ds)
		}
	}
	for _, l := range lines {
		for i := range l.units {
			u := &l.units[i]
			if root, w, ok := g.unit(u, &ds, ancestors); ok {
				return root, w, true
			}
		}
	}
	return "", "", false
}

// unit tests the words of one unit.
func (g *guard) unit(u *bashunits.Unit, ds *dirSet, ancestors bool) (root, word string, ok bool) {
	if ancestors {
		if !mutatingCommands[path.Base(u.Name)] {
			return "", "", false
		}
		for _, w := range u.Words {
			if root, ok := g.word(w, ds, true, true); ok {
				return root, w, true
			}
		}
		return "", "", false
	}
	write := writes(u)
	// The command name is a word of Words too: skip its first occurrence
	// when it has no `/`, as bash looks it up in PATH.
	nameSkipped := u.Name == "" || strings.Contains(u.Name, "/")
	for _, w := range u.Words {
		if !nameSkipped && len(u.Args) > 0 && w == u.Args[0] {
			nameSkipped = true
			if !mentionsAny(g, w) {
				continue
			}
		}
		if root, ok := g.word(w, ds, write || isTarget(u, w), false); ok {
			return root, w, true
		}
	}
	for _, w := range intoDirs(u) {
		if root, ok := g.word(w, ds, true, true); ok {
			return root, w, true
		}
	}
	return "", "", false
}

func mentionsAny(g *guard, w string) bool {
	_, ok := g.mentions(strings.ReplaceAll(w, bashunits.Mark, ""))
	return ok
}

func isTarget(u *bashunits.Unit, w string) bool {
	for _, t := range u.Targets {
		if t == w {
			return true
		}
	}
	return false
}

// cdTarget notes the directory a cd or pushd unit changes to, and any
// assignment of CDPATH, after which a cd may go anywhere.
func (g *guard) cdTarget(u *bashunits.Unit, ds *dirSet) {
	if strings.Contains(u.Command, "CDPATH") {
		ds.unknown = true
	}
	if name := path.Base(u.Name); name != "cd" && name != "pushd" || len(u.Args) == 0 {
		return
	}
	target := ""
	for _, a := range u.Args[1:] {
		if a == "-" {
			ds.unknown = true
			return
		}
		if !strings.HasPrefix(a, "-") {
			target = a
			break
		}
	}
	if target == "" {
		target = "~"
	}
	p := g.resolveWord(target)
	switch {
	case unknowable(p) || strings.IndexByte(p, anyPath) >= 0:
		ds.unknown = true
	case path.IsAbs(p):
		ds.known = append(ds.known, cleanPattern(p))
	default:
		for _, d := range ds.known {
			ds.known = append(ds.known, cleanPattern(d+"/"+p))
		}
		if len(ds.known) == 0 {
			ds.unknown = true
		}
	}
}

// word tests one word and each piece after its first `=`.
func (g *guard) word(w string, ds *dirSet, write, mutating bool) (string, bool) {
	if root, ok := g.candidate(w, ds, write, mutating); ok {
		return root, true
	}
	if i := strings.IndexByte(w, '='); i >= 0 {
		for rest := w[i+1:]; rest != ""; {
			var piece string
			piece, rest, _ = strings.Cut(rest, ":")
			if root, ok := g.candidate(piece, ds, write, mutating); ok {
				return root, true
			}
		}
	}
	return "", false
}

// candidate tests one path-like string; see the top of this file.
func (g *guard) candidate(c string, ds *dirSet, write, mutating bool) (string, bool) {
	if c == "" || c[0] == '-' {
		return "", false
	}
	plain := strings.ReplaceAll(c, bashunits.Mark, "")
	if strings.HasPrefix(plain, agentDirVariable) || strings.HasPrefix(plain, "${"+agentDirVariable[1:]) {
		return agentDirVariable, true
	}
	if plain != c {
		// The spelling test, on the decoded word (`~/.pi/$'agent'`).
		if root, ok := g.mentions(plain); ok && !strings.HasPrefix(plain, "$") {
			return root, true
		}
	}
	if unknownUserHome(c) {
		return unknownHome, true
	}
	p := g.resolveWord(c)
	if unknowable(p) {
		if write {
			return unknownTarget, true
		}
		return "", false
	}
	if p[0] == '/' {
		return g.hit(cleanPattern(p), mutating)
	}
	return g.relative(p, ds, write, mutating)
}

// relative tests a relative pattern in every directory it may be
// relative to.
func (g *guard) relative(p string, ds *dirSet, write, mutating bool) (string, bool) {
	up := dotDot(p)
	bare := !strings.Contains(p, "/")
	for _, d := range ds.known {
		// Without a `..` the joined path lies under d: no root can be hit
		// unless d is in one or holds one. Most words (`status`, `-la`,
		// `src/main.go`) end here without allocating.
		if !up && !g.related(d) {
			continue
		}
		root, ok := g.hit(cleanPattern(d+"/"+p), mutating)
		if !ok {
			continue
		}
		if write || up || root == g.mailbox[0] || root == g.mailbox[1] {
			return root, true
		}
		if !bare && !g.inside(d) {
			return root, true
		}
	}
	if ds.unknown && write {
		return unknownTarget, true
	}
	if len(ds.known) == 0 && (!bare || write) {
		return g.entersRoot(p)
	}
	return "", false
}

// related reports whether a path under d could be in a protected tree or
// name its ancestor.
func (g *guard) related(d string) bool {
	for _, r := range g.roots {
		if hasWildcard(d) {
			if reaches(d, r, true) || reaches(d+"/"+string(anyPath), r, false) {
				return true
			}
			continue
		}
		if within(d, r) || within(r, d) {
			return true
		}
	}
	return false
}

// inside reports whether d lies in a protected tree.
func (g *guard) inside(d string) bool {
	for _, r := range g.roots {
		if hasWildcard(d) && reaches(d, r, false) || within(d, r) {
			return true
		}
	}
	return false
}

func dotDot(c string) bool {
	return c == ".." || strings.HasPrefix(c, "../") || strings.HasSuffix(c, "/..") || strings.Contains(c, "/../")
}

// toolInput tests the path-like tokens of a tool's input (JSON, usually):
// the runs of characters between blanks, quotes and the separators of
// structured text, with JSON's `\/` read as `/`.
func (g *guard) toolInput(v, cwd string) (root, token string, ok bool) {
	if strings.Contains(v, `\/`) {
		v = strings.ReplaceAll(v, `\/`, "/")
	}
	if strings.Contains(v, `\u002f`) || strings.Contains(v, `\u002F`) {
		v = strings.NewReplacer(`\u002f`, "/", `\u002F`, "/").Replace(v)
	}
	var buf [1]string
	ds := dirSet{cwd: cwd, known: buf[:0]}
	if cwd != "" {
		ds.known = append(ds.known, cwd)
	}
	for start := 0; start < len(v); {
		end := strings.IndexAny(v[start:], " \t\r\n\"',;=()<>|&`")
		if end < 0 {
			end = len(v)
		} else {
			end += start
		}
		t := v[start:end]
		start = end + 1
		if t == "" || !strings.ContainsRune(t, '/') && t[0] != '~' && t[0] != '$' {
			continue
		}
		if root, ok := g.candidate(t, &ds, false, false); ok {
			return root, t, true
		}
	}
	return "", "", false
}

// braceList returns where a brace list (`{a,b}`, `{1..3}`) starts in p,
// or -1.
func braceList(p string) int {
	for i := 0; i < len(p); i++ {
		if p[i] != '{' {
			continue
		}
		end := strings.IndexByte(p[i:], '}')
		if end < 0 {
			return -1
		}
		if body := p[i+1 : i+end]; strings.ContainsRune(body, ',') || strings.Contains(body, "..") {
			return i
		}
	}
	return -1
}

// globHit reports the root a pattern (cleaned, absolute) could name a
// path in, or with mutating, an ancestor of.
func (g *guard) globHit(p string, mutating bool) (string, bool) {
	for _, r := range g.roots {
		if reaches(p, r, mutating) {
			return r, true
		}
	}
	return "", false
}

// segmentMatch matches one segment as bash would (path.Match's syntax is
// bash's for `*`, `?` and `[…]`); a malformed bracket is literal to bash.
func segmentMatch(pattern, name string) bool {
	if !strings.ContainsAny(pattern, `*?[\`) {
		return pattern == name
	}
	ok, err := path.Match(pattern, name)
	if err != nil {
		return pattern == name
	}
	return ok
}
