package mailbox

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapeSessionID(t *testing.T) {
	tests := []struct {
		name, id, want string
	}{
		{"plain", "parent-session", "parent-session"},
		{"uuid", "019a7f3c-1b2e-7c4d-9e8f-0a1b2c3d4e5f", "019a7f3c-1b2e-7c4d-9e8f-0a1b2c3d4e5f"},
		{"space", "parent session", "parent%20session"},
		{"slash", "a/b", "a%2Fb"},
		{"traversal inside", "../x", "..%2Fx"},
		{"backslash", `a\b`, "a%5Cb"},
		{"e acute", "é", "%C3%A9"},
		{"japanese", "日本", "%E6%97%A5%E6%9C%AC"},
		{"emoji", "😀", "%F0%9F%98%80"},
		{"js unreserved marks", "!*'()", "!*'()"},
		{"tilde", "~", "~"},
		{"percent", "%", "%25"},
		{"already escaped", "%2F", "%252F"},
		{"plus", "+", "%2B"},
		{"question", "?", "%3F"},
		{"hash", "#", "%23"},
		{"ampersand", "&", "%26"},
		{"equals", "=", "%3D"},
		{"colon", "a:b", "a%3Ab"},
		{"nul", "a\x00b", "a%00b"},
		{"three dots", "...", "..."},
		{"trimmed", "  id\t\n", "id"},
		{"bom trimmed like js", "\ufeffid\ufeff", "id"},
		{"nel kept like js", "\u0085id", "%C2%85id"},
		{"unknown inside", "unknowns", "unknowns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EscapeSessionID(tt.id)
			if err != nil {
				t.Fatalf("EscapeSessionID(%q): %v", tt.id, err)
			}
			if got != tt.want {
				t.Errorf("EscapeSessionID(%q) = %q, want %q", tt.id, got, tt.want)
			}
		})
	}
}

func TestEscapeSessionIDRefuses(t *testing.T) {
	tests := []struct {
		name, id string
	}{
		{"empty", ""},
		{"blank", " \t\r\n"},
		{"unknown", "unknown"},
		{"unknown any case", " UnKnOwN "},
		{"unknown with kelvin sign", "un\u212anown"},
		{"dot", "."},
		{"dot dot", ".."},
		{"dot dot padded", " .. "},
		{"invalid utf-8", "abc\xff"},
		{"lone surrogate as wtf-8", "\xed\xa0\x80"},
		{"too long", strings.Repeat("日", 84)}, // 84*9 = 756 escaped bytes
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EscapeSessionID(tt.id)
			if !errors.Is(err, ErrInvalidSessionID) {
				t.Fatalf("EscapeSessionID(%q) = %q, %v; want an ErrInvalidSessionID", tt.id, got, err)
			}
		})
	}
}

func TestEscapeSessionIDLengthLimit(t *testing.T) {
	fits := strings.Repeat("a", maxNameBytes-len(".json"))
	if _, err := EscapeSessionID(fits); err != nil {
		t.Errorf("%d-byte id: %v", len(fits), err)
	}
	if _, err := EscapeSessionID(fits + "a"); !errors.Is(err, ErrInvalidSessionID) {
		t.Errorf("%d-byte id: got %v, want ErrInvalidSessionID", len(fits)+1, err)
	}
}

// TestEscapeSessionIDMatchesJavaScript replays cases produced by node
// (testdata/transport/gen-escape.js): every ASCII character, whitespace
// that JavaScript's trim and Go's TrimSpace disagree on, and UTF-8 of every
// length.
func TestEscapeSessionIDMatchesJavaScript(t *testing.T) {
	raw, err := os.ReadFile("testdata/transport/escape.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Input   string  `json:"input"`
		Escaped *string `json:"escaped"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 128 {
		t.Fatalf("only %d cases in the fixture", len(cases))
	}
	for _, c := range cases {
		got, err := EscapeSessionID(c.Input)
		switch {
		case c.Escaped == nil:
			if !errors.Is(err, ErrInvalidSessionID) {
				t.Errorf("EscapeSessionID(%q) = %q, %v; pi normalizes it to null", c.Input, got, err)
			}
		case *c.Escaped == "." || *c.Escaped == "..":
			if !errors.Is(err, ErrInvalidSessionID) {
				t.Errorf("EscapeSessionID(%q) = %q, %v; want refused as a traversal", c.Input, got, err)
			}
		case err != nil:
			t.Errorf("EscapeSessionID(%q): %v; pi escapes it to %q", c.Input, err, *c.Escaped)
		case got != *c.Escaped:
			t.Errorf("EscapeSessionID(%q) = %q, pi escapes it to %q", c.Input, got, *c.Escaped)
		}
	}
}

// FuzzEscapeSessionID checks that escaping is a safe, injective path
// segment: decoding it gives back the normalized id, and it is never a
// traversal or a name with a separator.
func FuzzEscapeSessionID(f *testing.F) {
	for _, s := range []string{"parent", "a/b", "..", ".", " x ", "日本", "%", "unknown", "\xff", "\ufeff.\ufeff", "!*'()~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		esc, err := EscapeSessionID(id)
		if err != nil {
			if !errors.Is(err, ErrInvalidSessionID) {
				t.Fatalf("EscapeSessionID(%q): error %v does not wrap ErrInvalidSessionID", id, err)
			}
			return
		}
		if esc == "" || esc == "." || esc == ".." || strings.ContainsAny(esc, "/\\\x00") || len(esc) > maxNameBytes-len(".json") {
			t.Fatalf("EscapeSessionID(%q) = %q: not a safe file name", id, esc)
		}
		for i := 0; i < len(esc); i++ {
			if c := esc[i]; !uriUnreserved(c) && c != '%' && !strings.ContainsRune("0123456789ABCDEF", rune(c)) {
				t.Fatalf("EscapeSessionID(%q) = %q: byte %q outside the escaped alphabet", id, esc, c)
			}
		}
		norm, err := NormalizeSessionID(id)
		if err != nil {
			t.Fatalf("escaped %q but NormalizeSessionID fails: %v", id, err)
		}
		back, err := url.PathUnescape(esc)
		if err != nil || back != norm {
			t.Fatalf("EscapeSessionID(%q) = %q decodes to %q (%v), want %q", id, esc, back, err, norm)
		}
		if !utf8.ValidString(esc) {
			t.Fatalf("EscapeSessionID(%q) = %q is not UTF-8", id, esc)
		}
		if again, err := EscapeSessionID(norm); err != nil || again != esc {
			t.Fatalf("escaping is not stable under normalization: %q vs %q (%v)", esc, again, err)
		}
	})
}
