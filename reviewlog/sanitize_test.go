package reviewlog

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestIsSensitiveKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"authorization", true},
		{"Authorization", true},
		{"proxyAuthorization", true},
		{"apiKey", true},
		{"api_key", true},
		{"API-KEYS", true},
		{"apikeys", true},
		{"privateKey", true},
		{"private_keys", true},
		{"secret", true},
		{"clientSecret", true},
		{"token", true},
		{"accessToken", true},
		{"maxTokens", true}, // pi masks it too; over-masking is the safe side
		{"password", true},
		{"PASSWD", true},
		{"credentials", true},
		{"cookie", true},
		{"Set-Cookie", true},
		{"key", true},
		{"Keys", true},
		{"ssh_key", true},
		{"key-id", true},
		{"key_file", true},
		{"x-key-y", true},
		{"sshKey", true}, // camel-case tail
		{"signingKeys", true},
		{"SSHKey", true},

		{"monkey", false},
		{"keyboard", false},
		{"turkey", false},
		{"hockey", false},
		{"donkeys", false},
		{"keystone", false},
		{"monKeyboard", false},
		{"keyId", false},
		{"requestId", false},
		{"decidedBy", false},
		{"reason", false},
		{"pattern", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsSensitiveKey(tt.key); got != tt.want {
			t.Errorf("IsSensitiveKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

// sanitizeJSON runs the write pipeline's value handling over a JSON text.
func sanitizeJSON(t *testing.T, in string, width int) string {
	t.Helper()
	tree, err := normalize(json.RawMessage(in))
	if err != nil {
		t.Fatalf("normalize %s: %v", in, err)
	}
	out, err := encode(sanitize(tree, width))
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return string(out)
}

func TestRedactTree(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "top level",
			in:   `{"token":"abc","command":"ls"}`,
			want: `{"command":"ls","token":"[redacted]"}`,
		},
		{
			name: "nested object",
			in:   `{"payload":{"headers":{"Authorization":"Bearer x","accept":"*/*"}}}`,
			want: `{"payload":{"headers":{"Authorization":"[redacted]","accept":"*/*"}}}`,
		},
		{
			name: "objects inside arrays",
			in:   `{"grants":[{"surface":"bash","apiKey":"k1"},{"surface":"mcp","sshKey":"k2"}]}`,
			want: `{"grants":[{"apiKey":"[redacted]","surface":"bash"},{"sshKey":"[redacted]","surface":"mcp"}]}`,
		},
		{
			name: "null under a sensitive key stays null",
			in:   `{"secret":null,"nested":{"password":null}}`,
			want: `{"nested":{"password":null},"secret":null}`,
		},
		{
			name: "subtree under a masked key is masked whole",
			in:   `{"credentials":{"user":"u","list":[1,2]}}`,
			want: `{"credentials":"[redacted]"}`,
		},
		{
			name: "non-string values are masked too",
			in:   `{"key":42,"cookie":false,"keys":[1,2]}`,
			want: `{"cookie":"[redacted]","key":"[redacted]","keys":"[redacted]"}`,
		},
		{
			name: "look-alikes survive",
			in:   `{"monkey":"m","keyboard":"k","turkey":"t"}`,
			want: `{"keyboard":"k","monkey":"m","turkey":"t"}`,
		},
		{
			name: "array values under plain keys are walked, strings in arrays are not keys",
			in:   `{"values":["token","password"]}`,
			want: `{"values":["token","password"]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sanitizeJSON(t, tt.in, DefaultFieldWidth); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestCapString(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		width int
		want  string
	}{
		{"shorter", "abc", 5, "abc"},
		{"exactly the cap", "abcde", 5, "abcde"},
		{"one over", "abcdef", 5, "abcd…"},
		{"width 1", "abc", 1, "…"},
		{"width 1 exact", "a", 1, "a"},
		{"empty", "", 1, ""},
		{"two-byte runes at the cap", "ééééé", 5, "ééééé"},
		{"two-byte runes over", "éééééé", 5, "éééé…"},
		{"three-byte runes", "日本語のテキスト", 4, "日本語…"},
		{"four-byte runes", "🙂🙂🙂🙂🙂🙂", 3, "🙂🙂…"},
		{"mixed, cut after a multi-byte rune", "aé日🙂b", 4, "aé日…"},
		{"bytes over, runes within", "日本語", 3, "日本語"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := capString(tt.in, tt.width)
			if got != tt.want {
				t.Fatalf("capString(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
			}
			if n := utf8.RuneCountInString(tt.in); n > tt.width {
				if c := utf8.RuneCountInString(got); c != tt.width {
					t.Errorf("cut result has %d runes, want exactly %d", c, tt.width)
				}
			}
		})
	}
}

func TestCapTree(t *testing.T) {
	long := strings.Repeat("x", 12)
	tests := []struct {
		name, in, want string
	}{
		{
			name: "nested objects and arrays",
			in:   `{"a":"` + long + `","b":{"c":["` + long + `",{"d":"` + long + `"}]}}`,
			want: `{"a":"xxxxxxxxx…","b":{"c":["xxxxxxxxx…",{"d":"xxxxxxxxx…"}]}}`,
		},
		{
			name: "exactly-cap strings untouched",
			in:   `{"a":"xxxxxxxxxx","b":["yyyyyyyyyy"]}`,
			want: `{"a":"xxxxxxxxxx","b":["yyyyyyyyyy"]}`,
		},
		{
			name: "keys are not capped",
			in:   `{"` + long + `":"v"}`,
			want: `{"` + long + `":"v"}`,
		},
		{
			name: "numbers, booleans and null pass through",
			in:   `{"n":12345678901234567890,"f":1.5,"t":true,"z":null}`,
			want: `{"f":1.5,"n":12345678901234567890,"t":true,"z":null}`,
		},
		{
			name: "masking runs before the cap",
			in:   `{"token":"` + long + `"}`,
			want: `{"token":"[redacted]"}`,
		},
		{
			name: "escape sequences count as one rune",
			in:   `{"a":"\n\n\n\n\n\n\n\n\n\n\n"}`,
			want: `{"a":"\n\n\n\n\n\n\n\n\n…"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sanitizeJSON(t, tt.in, 10); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestMaskedValueIsCappedWhenCapIsNarrow(t *testing.T) {
	if got, want := sanitizeJSON(t, `{"token":"abc"}`, 4), `{"token":"[re…"}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
