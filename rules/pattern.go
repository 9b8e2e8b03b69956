package rules

import (
	"strings"
	"unicode/utf8"
)

// Pattern is a compiled pi wildcard pattern, matched against a whole value:
//
//   - `*` matches any run of characters, `/` and newlines included; `**` is
//     the same as `*`;
//   - `?` matches exactly one character (one UTF-8 encoded rune; an invalid
//     byte counts as one character);
//   - every other byte is literal: there are no character classes, braces
//     or escapes, so `\*` is a backslash followed by a wildcard;
//   - a pattern that ends in ` *` (a space, then the final star) also
//     matches the value without that tail, so `git *` matches `git` as well
//     as `git push`. `git **` does not match `git`: pi tests the tail after
//     turning the pattern into a regular expression, and `**` leaves `.*.*`
//     there, not ` .*`;
//   - a leading `~`, `$HOME` or `${HOME}` (alone, or followed by `/`)
//     expands to the home directory given to [CompilePattern].
//
// These are the semantics of pi's wildcard-matcher.ts, which builds the
// anchored, dot-all regular expression `^…$`. Pattern matches without
// regular expressions and without backtracking: the text before the first
// star must match at the start, the text after the last star at the end,
// and each run in between is taken at its leftmost place (found with
// strings.Index; a run containing `?` is tried at each character). So a
// value is scanned about once per run, and a run with `?` costs at most
// its length times the value's; no pattern can make matching exponential.
//
// The zero Pattern matches only the empty string.
type Pattern struct {
	src  string
	full glob
	// bare is the pattern without its trailing " *", when it has one.
	bare    glob
	hasBare bool
}

// CompilePattern compiles src. home is the directory that `~`, `$HOME` and
// `${HOME}` expand to; when it is empty they stay literal.
func CompilePattern(src, home string) Pattern {
	expanded := expandHome(src, home)
	p := Pattern{src: src, full: compileGlob(expanded)}
	if strings.HasSuffix(expanded, " *") {
		p.bare = compileGlob(expanded[:len(expanded)-2])
		p.hasBare = true
	}
	return p
}

// Match reports whether p matches the whole of value.
func (p *Pattern) Match(value string) bool {
	if p.hasBare && p.bare.match(value) {
		return true
	}
	return p.full.match(value)
}

// String returns the pattern as written, before home expansion.
func (p *Pattern) String() string { return p.src }

// MatchPattern compiles pattern and matches it against value; a
// convenience for one-off matches. Hot paths compile once.
func MatchPattern(pattern, value, home string) bool {
	p := CompilePattern(pattern, home)
	return p.Match(value)
}

// expandHome replaces a leading `~`, `$HOME` or `${HOME}` with home when the
// prefix stands alone or is followed by `/`. `~user` and `$HOMEDIR` stay
// literal. The rest is appended as written (no path cleaning), so the
// pattern keeps its stars and dots exactly.
func expandHome(p, home string) string {
	if home == "" || p == "" {
		return p
	}
	var rest string
	switch {
	case p == "~" || p == "$HOME" || p == "${HOME}":
		return home
	case strings.HasPrefix(p, "~/"):
		rest = p[1:]
	case strings.HasPrefix(p, "$HOME/"):
		rest = p[len("$HOME"):]
	case strings.HasPrefix(p, "${HOME}/"):
		rest = p[len("${HOME}"):]
	default:
		return p
	}
	return strings.TrimSuffix(home, "/") + rest
}

// glob is one star-separated pattern: segs[0] must match at the start,
// segs[len-1] at the end, and the middle segments in order in between.
// Empty middle segments (from `**`) are dropped.
type glob struct {
	kind globKind
	segs []segment
}

type globKind uint8

const (
	globLiteral globKind = iota // no wildcard at all: string equality
	globAny                     // only stars: matches everything
	globExact                   // no star, but `?`: one segment, whole value
	globStars                   // at least one star and some text
)

// segment is a run of pattern text between stars.
type segment struct {
	text string
	// lead is the literal prefix of text before its first '?'.
	lead string
	// q reports whether text holds a '?'.
	q bool
}

func newSegment(text string) segment {
	i := strings.IndexByte(text, '?')
	if i < 0 {
		return segment{text: text, lead: text}
	}
	return segment{text: text, lead: text[:i], q: true}
}

func compileGlob(s string) glob {
	if strings.IndexByte(s, '*') < 0 {
		if strings.IndexByte(s, '?') < 0 {
			return glob{kind: globLiteral, segs: []segment{{text: s, lead: s}}}
		}
		return glob{kind: globExact, segs: []segment{newSegment(s)}}
	}
	parts := strings.Split(s, "*")
	segs := make([]segment, 0, len(parts))
	last := len(parts) - 1
	for i, part := range parts {
		if part == "" && i != 0 && i != last {
			continue // `**` is `*`
		}
		segs = append(segs, newSegment(part))
	}
	if len(segs) == 2 && segs[0].text == "" && segs[1].text == "" {
		return glob{kind: globAny}
	}
	return glob{kind: globStars, segs: segs}
}

func (g *glob) match(v string) bool {
	switch g.kind {
	case globAny:
		return true
	case globLiteral:
		if len(g.segs) == 0 { // the zero Pattern
			return v == ""
		}
		return v == g.segs[0].text
	case globExact:
		n, ok := g.segs[0].prefixLen(v)
		return ok && n == len(v)
	}
	first, last := &g.segs[0], &g.segs[len(g.segs)-1]
	n, ok := first.prefixLen(v)
	if !ok {
		return false
	}
	rest := v[n:]
	end, ok := last.suffixStart(rest)
	if !ok {
		return false
	}
	// The first and last segments are anchored; every middle segment is
	// taken at its leftmost place. Leftmost is always safe: whatever the
	// later segments can match after a later place, they can match after
	// an earlier one, because a star lies in between.
	mid := rest[:end]
	for i := 1; i < len(g.segs)-1; i++ {
		at, w := g.segs[i].find(mid)
		if at < 0 {
			return false
		}
		mid = mid[at+w:]
	}
	return true
}

// prefixLen matches the segment at the start of v and returns how many
// bytes of v it consumed.
func (s *segment) prefixLen(v string) (int, bool) {
	if !s.q {
		if strings.HasPrefix(v, s.text) {
			return len(s.text), true
		}
		return 0, false
	}
	j := 0
	for i := 0; i < len(s.text); i++ {
		if s.text[i] == '?' {
			if j >= len(v) {
				return 0, false
			}
			_, w := utf8.DecodeRuneInString(v[j:])
			j += w
			continue
		}
		if j >= len(v) || v[j] != s.text[i] {
			return 0, false
		}
		j++
	}
	return j, true
}

// suffixStart matches the segment at the end of v, reading backwards, and
// returns where in v the match starts.
func (s *segment) suffixStart(v string) (int, bool) {
	if !s.q {
		if strings.HasSuffix(v, s.text) {
			return len(v) - len(s.text), true
		}
		return 0, false
	}
	j := len(v)
	for i := len(s.text) - 1; i >= 0; i-- {
		if s.text[i] == '?' {
			if j == 0 {
				return 0, false
			}
			_, w := utf8.DecodeLastRuneInString(v[:j])
			j -= w
			continue
		}
		if j == 0 || v[j-1] != s.text[i] {
			return 0, false
		}
		j--
	}
	return j, true
}

// find returns the leftmost place in v where the segment matches and the
// length of that match, or -1.
func (s *segment) find(v string) (at, width int) {
	if !s.q {
		return strings.Index(v, s.text), len(s.text)
	}
	i := 0
	for i <= len(v) {
		if s.lead != "" {
			k := strings.Index(v[i:], s.lead)
			if k < 0 {
				return -1, 0
			}
			i += k
		}
		if n, ok := s.prefixLen(v[i:]); ok {
			return i, n
		}
		if i == len(v) {
			break
		}
		// Step one character, so that a leading '?' never starts inside
		// a multi-byte character.
		_, w := utf8.DecodeRuneInString(v[i:])
		i += w
	}
	return -1, 0
}
