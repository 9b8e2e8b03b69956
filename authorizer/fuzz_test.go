package authorizer

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/wire"
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

// FuzzProjectBash: whatever payload and display value a child sends, the
// projection does not fail, and a complete input it reports is the
// display value or a "full command" the payload states; the units that
// asked are copied as sent, never nil.
func FuzzProjectBash(f *testing.F) {
	f.Add([]byte(`{"kind":"bash","request":{"value":"git push"},"evidence":[{"label":"full command","text":"a && git push","detail":null}]}`), "git push", "git push")
	f.Add([]byte(`{"kind":"bash","request":{"value":"git push"},"evidence":[]}`), "git push", "")
	f.Add([]byte(`{"kind":"bash","evidence":[{"label":"full command","text":7}]}`), "x", "x")
	f.Add([]byte(`{"kind":"bash","request":{"value":"x"},"evidence":null}`), "x", "x")
	f.Add([]byte(``), "make && make install", "make")
	f.Add([]byte(`[1,2]`), "v", "v")
	f.Fuzz(func(t *testing.T, payload []byte, value, unit string) {
		req := wire.Request{ID: "r", Value: value, AccessIntent: &wire.AccessIntent{Surface: "bash"}}
		if len(payload) > 0 {
			req.Payload = payload
		}
		if unit != "" {
			req.AccessIntent.AskingUnits = []wire.AskingUnit{{Command: unit}}
		}
		b := Project(req, Disclosure{}).Bash
		if b == nil {
			return
		}
		if b.Complete == "" || b.Triggering == nil || len(b.Triggering) != len(req.AccessIntent.AskingUnits) {
			t.Fatalf("Bash = %#v for %q", b, payload)
		}
		if b.Complete != value && !bytes.Contains(payload, []byte(`full command`)) {
			t.Fatalf("Complete %q is neither the value %q nor a full command of %q", b.Complete, value, payload)
		}
	})
}

// FuzzCleanVerdictNotes: whatever code and metadata a plugin sends, what
// the review log gets is a code of the allowed alphabet or nothing, and
// bounded, printable, valid strings and non-negative counts.
func FuzzCleanVerdictNotes(f *testing.F) {
	f.Add("not_bash", "claude-x", "v1", int64(10), int64(-3), int64(5))
	f.Add("has space", "\x1b[2J"+strings.Repeat("é", 200), "\u202e", int64(-1), int64(0), int64(-9))
	f.Fuzz(func(t *testing.T, code, model, version string, in, out, lat int64) {
		c := CleanCode(code)
		if c != "" && (c != code || len(c) > MaxCodeBytes || strings.Trim(c, "abcdefghijklmnopqrstuvwxyz0123456789_") != "") {
			t.Fatalf("CleanCode(%q) = %q", code, c)
		}
		m := CleanMeta(Meta{Model: model, PromptVersion: version, InputTokens: in, OutputTokens: out, LatencyMs: lat})
		for _, s := range []string{m.Model, m.PromptVersion} {
			if len(s) > MaxMetaBytes || !utf8.ValidString(s) || s != strings.TrimSpace(s) {
				t.Fatalf("CleanMeta kept %q", s)
			}
			for _, r := range s {
				if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
					t.Fatalf("CleanMeta kept %U in %q", r, s)
				}
			}
		}
		if m.InputTokens < 0 || m.OutputTokens < 0 || m.LatencyMs < 0 {
			t.Fatalf("CleanMeta kept a negative count: %+v", m)
		}
	})
}
