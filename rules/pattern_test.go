package rules

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

const testHome = "/home/ada"

var matchTests = []struct {
	pattern, value string
	want           bool
}{
	// pi's own examples: a trailing " *" also matches the bare command.
	{"git *", "git", true},
	{"git *", "git push", true},
	{"git *", "git push origin main", true},
	{"git *", "git ", true},
	{"git *", "gitk", false},
	{"git *", "github", false},
	{"git *", "Git push", false}, // case-sensitive
	{"npm run *", "npm run", true},
	{"npm run *", "npm run dev", true},
	{"npm run *", "npm runner", false},
	// `*` crosses `/` and newlines, and may be empty.
	{"*", "", true},
	{"*", "a/b/c", true},
	{"*", "line one\nline two", true},
	{"**", "a/b", true},
	{"src/*", "src/a/b/c.go", true},
	{"*.go", "pkg/sub\ndir/x.go", true},
	{"a*b", "ab", true},
	{"a*b", "a/x/b", true},
	{"a*b", "a/x/bc", false},
	{"a*a", "a", false},
	{"a*b*c", "abc", true},
	{"a*b*c", "aXbYbZc", true},
	{"a*b*c", "acb", false},
	{"*x*", "x", true},
	{"*x*", "", false},
	// `**` is `*`, except that pi's trailing-space rule sees `.*.*`.
	{"a**b", "a/b", true},
	{"git **", "git", false},
	{"git **", "git x", true},
	{" *", "", true},
	{" *", " x", true},
	{" *", "x", false},
	// `?` is exactly one character.
	{"?", "a", true},
	{"?", "é", true},
	{"?", "/", true},
	{"?", "\n", true},
	{"?", "", false},
	{"?", "ab", false},
	{"file.?", "file.c", true},
	{"file.?", "file.cc", false},
	{"a?c", "aéc", true},
	{"a?c", "aééc", false},
	{"*?", "", false},
	{"*?", "x", true},
	{"*a?c*", "xxaécyy", true},
	{"*?é", "aé", true},
	{"*??", "é", false},
	{"??", "日本", true},
	// Everything else is literal: no classes, braces, escapes or anchors.
	{"a.b", "axb", false},
	{"a.b", "a.b", true},
	{"(x)", "(x)", true},
	{"[ab]", "a", false},
	{"[ab]", "[ab]", true},
	{"a+b", "a+b", true},
	{"a+b", "aab", false},
	{"{a,b}", "a", false},
	{"^a$", "^a$", true},
	{`a\*`, `a\anything`, true},
	{`a\?`, `a\b`, true},
	{`a\?`, `a?`, false},
	{"", "", true},
	{"", "x", false},
	// Home prefixes expand.
	{"~/x/*", testHome + "/x/y", true},
	{"~/x/*", testHome + "/x/", true},
	{"~/x/*", "~/x/y", false},
	{"~", testHome, true},
	{"$HOME/x", testHome + "/x", true},
	{"${HOME}/x", testHome + "/x", true},
	{"$HOME", testHome, true},
	{"$HOMEDIR/x", testHome + "DIR/x", false},
	{"$HOMEDIR/x", "$HOMEDIR/x", true},
	{"~user/x", "~user/x", true},
	{"x/~/y", "x/~/y", true},
	// Destructive-command patterns of the default config.
	{"rm -rf /*", "rm -rf /tmp/build", true},
	{"rm -rf /*", "rm -rf build", false},
	{"git push --force*", "git push --force-with-lease origin x", true},
	{"git push * -f", "git push origin -f", true},
	{"git push * -f", "git push origin feature-fix", false},
}

func TestMatch(t *testing.T) {
	for _, tt := range matchTests {
		p := CompilePattern(tt.pattern, testHome)
		if got := p.Match(tt.value); got != tt.want {
			t.Errorf("%q matching %q = %v, want %v", tt.pattern, tt.value, got, tt.want)
		}
		if ref := refMatch(tt.pattern, tt.value, testHome); ref != tt.want {
			t.Errorf("reference: %q matching %q = %v, want %v (the table disagrees with pi's construction)", tt.pattern, tt.value, ref, tt.want)
		}
	}
}

func TestZeroPattern(t *testing.T) {
	var p Pattern
	if !p.Match("") || p.Match("x") {
		t.Error("the zero Pattern must match only the empty string")
	}
}

func TestMatchWithoutHome(t *testing.T) {
	p := CompilePattern("~/x", "")
	if !p.Match("~/x") || p.Match("/x") {
		t.Error("with no home, ~ must stay literal")
	}
	if p := CompilePattern("~/x", "/home/ada/"); p.String() != "~/x" {
		t.Errorf("String() = %q, want the pattern as written", p.String())
	}
	if !MatchPattern("~/x", "/home/ada/x", "/home/ada/") {
		t.Error("a home with a trailing slash must not double it")
	}
}

// refMatch is pi's wildcard-matcher.ts done with Go's regexp: the pattern
// split on "*", each part regex-escaped with "?" turned into ".", joined
// with ".*", a trailing " .*" made optional, anchored, dot-all.
func refMatch(pattern, value, home string) bool {
	parts := strings.Split(expandHome(pattern, home), "*")
	for i, part := range parts {
		parts[i] = strings.ReplaceAll(regexp.QuoteMeta(part), `\?`, ".")
	}
	re := strings.Join(parts, ".*")
	if strings.HasSuffix(re, " .*") {
		re = re[:len(re)-3] + "( .*)?"
	}
	return regexp.MustCompile("(?s)^" + re + "$").MatchString(value)
}

// FuzzMatch compares the matcher with the regexp reference. The two agree
// on valid UTF-8; on invalid bytes regexp reads U+FFFD where Match
// compares bytes, so those inputs are only checked for not panicking.
func FuzzMatch(f *testing.F) {
	for _, tt := range matchTests {
		f.Add(tt.pattern, tt.value)
	}
	f.Add("*a*a*a*a*b", strings.Repeat("a", 200))
	f.Add("a?*?b", "a\xffxb")
	f.Fuzz(func(t *testing.T, pattern, value string) {
		if len(pattern) > 256 || len(value) > 1024 {
			return
		}
		p := CompilePattern(pattern, testHome)
		got := p.Match(value)
		if !utf8.ValidString(pattern) || !utf8.ValidString(value) {
			return
		}
		if want := refMatch(pattern, value, testHome); got != want {
			t.Fatalf("%q matching %q = %v, reference says %v", pattern, value, got, want)
		}
	})
}

var benchPatterns = []struct {
	name, pattern, value string
}{
	{"literal", "pwd", "pwd"},
	{"any", "*", "git status --short"},
	{"trailing-space-star", "git status *", "git status --short"},
	{"trailing-space-star-bare", "git status *", "git status"},
	{"prefix-miss", "git push --force*", "git status --short"},
	{"path-glob", "~/.ssh/*", "/home/ada/src/project/internal/rules/pattern.go"},
	{"three-stars", "*/internal/*/*.go", "/home/ada/src/project/internal/rules/pattern.go"},
	{"question", "file.???", "file.tar"},
	{"pathological", "*a*a*a*a*a*a*b", strings.Repeat("a", 1000)},
}

func BenchmarkMatch(b *testing.B) {
	for _, bp := range benchPatterns {
		p := CompilePattern(bp.pattern, testHome)
		b.Run(bp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p.Match(bp.value)
			}
		})
	}
}

// BenchmarkMatchRegexp is the same table through the regexp reference
// (compiled once), to show what the hand-written matcher saves.
func BenchmarkMatchRegexp(b *testing.B) {
	for _, bp := range benchPatterns {
		parts := strings.Split(expandHome(bp.pattern, testHome), "*")
		for i, part := range parts {
			parts[i] = strings.ReplaceAll(regexp.QuoteMeta(part), `\?`, ".")
		}
		src := strings.Join(parts, ".*")
		if strings.HasSuffix(src, " .*") {
			src = src[:len(src)-3] + "( .*)?"
		}
		re := regexp.MustCompile("(?s)^" + src + "$")
		b.Run(bp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				re.MatchString(bp.value)
			}
		})
	}
}
