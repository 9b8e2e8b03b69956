package authorizer

import (
	"strings"
	"testing"
)

func TestCleanReason(t *testing.T) {
	for in, want := range map[string]string{
		"  use pnpm\n":                 "use pnpm",
		"\x1b[31mred\x1b[0m":           "[31mred [0m",
		"a\u202eb":                     "a b",
		"bad \xff byte":                "bad \uFFFD byte",
		"":                             "",
		strings.Repeat("é", 2000):      strings.Repeat("é", MaxReasonRunes-1) + "…",
		"line1\u2028line2\r\nline3\t.": "line1 line2  line3 .",
	} {
		if got := CleanReason(in); got != want {
			t.Errorf("CleanReason(%q) = %q, want %q", in, got, want)
		}
	}
}
