package authorizer

import (
	"strings"
	"testing"
	"unicode/utf8"
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

func TestCleanCode(t *testing.T) {
	for in, want := range map[string]string{
		"not_bash":              "not_bash",
		"timeout":               "timeout",
		"missing_cwd2":          "missing_cwd2",
		strings.Repeat("a", 40): strings.Repeat("a", 40),
		strings.Repeat("a", 41): "",
		"":                      "",
		"has space":             "",
		"Upper":                 "",
		"dash-ed":               "",
		"\x1b[31mred":           "",
		"ok\n":                  "",
		"caf\u00e9":             "",
		"missing_cwd\u200b":     "",
	} {
		if got := CleanCode(in); got != want {
			t.Errorf("CleanCode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCleanMeta(t *testing.T) {
	got := CleanMeta(Meta{
		Model:         "\x1b[2Jclaude\u202e-x " + strings.Repeat("é", 5000),
		PromptVersion: "  judge-v1\n",
		InputTokens:   -5, OutputTokens: 12, LatencyMs: -1,
	})
	if got.PromptVersion != "judge-v1" || got.InputTokens != 0 || got.OutputTokens != 12 || got.LatencyMs != 0 {
		t.Errorf("CleanMeta = %+v", got)
	}
	if len(got.Model) > MaxMetaBytes || !utf8.ValidString(got.Model) || strings.ContainsAny(got.Model, "\x1b\u202e") ||
		!strings.HasPrefix(got.Model, "[2Jclaude -x é") {
		t.Errorf("Model = %q", got.Model)
	}
	if CleanMeta(Meta{}) != (Meta{}) {
		t.Error("the zero Meta is not clean")
	}
}
