package authorizer

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzCleanReason: whatever a plugin sends, the reason a child reads is
// valid UTF-8, one line of printable text, trimmed and capped.
func FuzzCleanReason(f *testing.F) {
	for _, s := range []string{"", " use pnpm ", "\x1b[2J\x1b[H", "a\u202eb\u2028c", "\xff\xfe", strings.Repeat("x", 1200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := CleanReason(s)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > MaxReasonRunes || got != strings.TrimSpace(got) {
			t.Fatalf("CleanReason(%q) = %q", s, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("CleanReason(%q) kept %U", s, r)
			}
		}
	})
}
