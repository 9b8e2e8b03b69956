package reviewlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/seed6639df8c/courier/provenance"
)

// renderBoth renders one detail by the fast path and by the generic one.
// accepted is false when the fast path declined, in which case Write uses
// the generic rendering and fast means nothing.
func renderBoth(width int, key string, v any) (fast string, accepted bool, generic string) {
	l := newLog(io.Discard, nil, config{width: width, extension: DefaultExtension, now: fixedClock})
	r := getRenderer(l.width, l.redacted)
	accepted = r.field(key, v)
	fast = string(r.buf)
	putRenderer(r)
	return fast, accepted, string(l.renderGeneric(key, v))
}

func checkSame(t testing.TB, width int, key string, v any) (accepted bool) {
	t.Helper()
	fast, accepted, generic := renderBoth(width, key, v)
	if accepted && fast != generic {
		t.Fatalf("width %d, key %q, value %#v:\nfast    %s\ngeneric %s", width, key, v, fast, generic)
	}
	return accepted
}

type ptrError struct{ msg string }

func (e *ptrError) Error() string { return e.msg } // panics on a nil receiver

type marshalingError struct{}

func (marshalingError) Error() string { return "as text" }

func (marshalingError) MarshalJSON() ([]byte, error) { return []byte(`{"as":"json"}`), nil }

// renderCases are values of every kind the fast path knows, with the
// corners of escaping, capping and masking, and values it must decline.
// fast says whether it must take them.
func renderCases() []struct {
	name string
	v    any
	fast bool
} {
	long := strings.Repeat("x", 1200)
	longReason := strings.Repeat("reason \"quoted\" ", 80)
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	deep := any("bottom")
	for range maxFastDepth + 5 {
		deep = map[string]any{"d": deep}
	}
	return []struct {
		name string
		v    any
		fast bool
	}{
		{"plain string", "plain", true},
		{"empty string", "", true},
		{"escapes", `quote " backslash \ slash / <html> & 'single'`, true},
		{"control bytes", "ctl \x00\x01\b\f\n\r\t\x1f\x7f end", true},
		{"line separators", "line\u2028para\u2029end", true},
		{"multi-byte", "é日本語🙂", true},
		{"long ASCII", long, true},
		{"long multi-byte", strings.Repeat("日本", 600), true},
		{"cap boundary", strings.Repeat("a", 999) + "é", true},
		{"cap boundary over", strings.Repeat("a", 999) + "éé", true},
		{"long with escapes", strings.Repeat("\"\n", 700), true},
		{"invalid UTF-8", "bad \xff utf8", false},
		{"true", true, true},
		{"false", false, true},
		{"int", -1, true},
		{"int8", int8(math.MinInt8), true},
		{"int16", int16(math.MaxInt16), true},
		{"int32", int32(math.MinInt32), true},
		{"int64", int64(math.MinInt64), true},
		{"ms timestamp", int64(1757000000123), true},
		{"uint", uint(0), true},
		{"uint8", uint8(255), true},
		{"uint16", uint16(65535), true},
		{"uint32", uint32(math.MaxUint32), true},
		{"uint64", uint64(math.MaxUint64), true},
		{"uintptr", uintptr(7), false},
		{"zero", 0.0, true},
		{"negative zero", math.Copysign(0, -1), true},
		{"one", 1.0, true},
		{"tenth", 0.1, true},
		{"latency", 12.345, true},
		{"1e-6", 1e-6, true},
		{"1e-7", 1e-7, true},
		{"just under 1e-6", 9.99e-7, true},
		{"1e20", 1e20, true},
		{"1e21", 1e21, true},
		{"huge", 1.5e300, true},
		{"max float", math.MaxFloat64, true},
		{"tiny", math.SmallestNonzeroFloat64, true},
		{"negative small", -2.5e-10, true},
		{"float32", float32(0.1), true},
		{"float32 small", float32(1e-7), true},
		{"float32 big", float32(1e21), true},
		{"float32 max", float32(math.MaxFloat32), true},
		{"NaN", math.NaN(), false},
		{"Inf", math.Inf(-1), false},
		{"number", json.Number("12345678901234567890"), true},
		{"number exp", json.Number("1.5e+10"), true},
		{"number negative zero", json.Number("-0"), true},
		{"number zero value", json.Number(""), true},
		{"number invalid", json.Number("1."), false},
		{"number words", json.Number("abc"), false},
		{"nil", nil, true},
		{"nil map", map[string]any(nil), true},
		{"nil slice", []any(nil), true},
		{"nil strings", []string(nil), true},
		{"empty map", map[string]any{}, true},
		{"empty slice", []any{}, true},
		{"empty strings", []string{}, true},
		{"strings", []string{"a", "tok\"en", long}, true},
		{"strings invalid", []string{"\xfe"}, false},
		{"masking", map[string]any{
			"token": "x", "apiKey": nil, "password": map[string]any(nil), "secret": map[string]any{},
			"Cookie": []any{}, "private_key": 0, "credentials": []string(nil), "monkey": "ok", "sshKey": json.RawMessage(`null`),
			"signingKeys": json.RawMessage(` {} `), "keyboard": long,
			"headers": map[string]any{"Authorization": "Bearer x", "accept": "*/*"},
			"list":    []any{map[string]any{"sshKey": "k", "name": "n"}, "token", 3},
		}, true},
		{"keys to escape", map[string]any{"a\"b": 1, "<x>": 2, "\u2028": 3, "é": 4, "": 5, "\x01": 6, "B": 7, "a": 8}, true},
		{"invalid key", map[string]any{"\xff": 1}, false},
		{"mixed slice", []any{nil, true, 1, 2.5, "s", []string{"x"}, map[string]any{"k": "v"}, json.RawMessage(`{"b":1,"a":2}`)}, true},
		{"string map", map[string]string{"a": "b"}, false},
		{"bytes", []byte("hi"), false},
		{"struct", struct{ A int }{1}, false},
		{"pointer", &struct{}{}, false},
		{"string pointer", provenance.Str("s"), false},
		{"channel", make(chan int), false},
		{"cycle", cyclic, false},
		{"deep", deep, false},
		{"user", provenance.User{Via: provenance.ViaDialog}, true},
		{"authorizer", provenance.Authorizer{Name: "model-judge", Verdict: provenance.VerdictAllow}, true},
		{"authorizer reason", provenance.Authorizer{Name: "j", Verdict: provenance.VerdictDeny, Reason: provenance.Str("\"quoted\"\n<b>é\u2028 bad \xff\t\x01")}, true},
		{"authorizer long reason", provenance.Authorizer{Name: "j", Verdict: provenance.VerdictDeny, Reason: &longReason}, true},
		{"rule bare", provenance.Rule{Surface: "bash"}, true},
		{"rule", provenance.Rule{Surface: "bash", Pattern: provenance.Str("git status*"), Origin: provenance.Str("global")}, true},
		{"session approval", provenance.SessionApproval{Surface: "read", Pattern: provenance.Str("/src/**")}, true},
		{"yolo", provenance.Yolo{}, true},
		{"infrastructure", provenance.InfrastructureRead{}, true},
		{"unavailable", provenance.Unavailable{Reason: long}, true},
		{"gate error", provenance.GateError{Reason: "deciding failed: boom"}, true},
		{"forwarded empty", provenance.Forwarded{}, true},
		{"forwarded nested", provenance.Forwarded{
			ResponderSessionID: provenance.Str("parent"),
			Decision: provenance.Forwarded{Decision: provenance.Forwarded{
				ResponderSessionID: provenance.Str("grandparent"),
				Decision:           provenance.Authorizer{Name: "j", Verdict: provenance.VerdictDeny, Reason: &longReason},
			}},
		}, true},
		{"rule pointer", &provenance.Rule{Surface: "bash"}, false},
		{"raw object", json.RawMessage(" {\"b\" : [1, 2.50, -0, 1E+2, 12345678901234567890123, 1e-7], \"a\":{\"token\":\"t\",\"nested\":null, \"k\":{}, \"keys\":[]}}\n"), true},
		{"raw escapes", json.RawMessage(`"esc \" \\ \/ \b \f \n \r \t \u00e9 \u0000 \u001F \u2028 \uFFFD \u003c"`), true},
		{"raw escaped cap", json.RawMessage(`"` + strings.Repeat(`\u00e9`, 1001) + `"`), true},
		{"raw long", json.RawMessage(`"` + long + `"`), true},
		{"raw literals", json.RawMessage(`[true,false,null,{},[],""]`), true},
		{"raw nil", json.RawMessage(nil), true},
		{"raw surrogate pair", json.RawMessage(`"\ud83d\ude00"`), false},
		{"raw stray surrogate", json.RawMessage(`"\ud800"`), false},
		{"raw duplicate key", json.RawMessage(`{"a":1,"a":2}`), false},
		{"raw escaped key", json.RawMessage(`{"to\u006ben":"x"}`), false},
		{"raw invalid UTF-8", json.RawMessage("\"\xff\""), false},
		{"raw truncated", json.RawMessage(`nul`), false},
		{"raw trailing comma", json.RawMessage(`{"a":1,}`), false},
		{"raw trailing comma array", json.RawMessage(`[1,]`), false},
		{"raw leading zero", json.RawMessage(`01`), false},
		{"raw bare point", json.RawMessage(`1.`), false},
		{"raw control byte", json.RawMessage("\"\x01\""), false},
		{"raw missing colon", json.RawMessage(`{"a" 1}`), false},
		{"raw empty", json.RawMessage(``), false},
		{"raw two values", json.RawMessage(`[1] [2]`), false},
		{"raw bad escape", json.RawMessage(`"\x"`), false},
		{"error", errors.New(`boom "quoted" <b>`), true},
		{"wrapped error", fmt.Errorf("write response perm-7: %w", io.ErrShortWrite), true},
		{"error invalid UTF-8", errors.New("bad \xff" + long), true},
		{"error long multi-byte", errors.New(strings.Repeat("é", 2000)), true},
		{"error that marshals", marshalingError{}, true},
		{"nil pointer error", (*ptrError)(nil), false},
		{"panicking marshaler", panickingMarshaler{}, false},
		{"failing marshaler", failingMarshaler{}, false},
	}
}

func TestFastRenderMatchesGeneric(t *testing.T) {
	for _, tc := range renderCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, key := range []string{"detail", "token", "apiKey", "sshKey", "monkey"} {
				for _, width := range []int{1, 2, 5, 10, 11, 100, DefaultFieldWidth, 4096} {
					accepted := checkSame(t, width, key, tc.v)
					if accepted != tc.fast {
						t.Fatalf("key %q width %d: fast path accepted = %v, want %v", key, width, accepted, tc.fast)
					}
				}
			}
		})
	}
}

// The same values nested in a map and a slice, where they meet masking and
// ordering as members rather than as a whole detail.
func TestFastRenderMatchesGenericNested(t *testing.T) {
	cases := renderCases()
	m := make(map[string]any, len(cases))
	var list []any
	for _, tc := range cases {
		if _, isErr := tc.v.(error); !tc.fast || isErr {
			continue // only a whole detail is logged as an error's message
		}
		m[tc.name] = tc.v
		m["token "+tc.name] = tc.v
		list = append(list, tc.v)
	}
	for _, width := range []int{1, 7, DefaultFieldWidth} {
		if !checkSame(t, width, "detail", map[string]any{"m": m, "list": list}) {
			t.Fatalf("width %d: the fast path declined a map of values it takes one by one", width)
		}
	}
}

// genericLine builds the line the way Write built it before the fast path:
// zerolog's prefix and every detail rendered generically.
func genericLine(l *Log, event string, details map[string]any) string {
	var buf bytes.Buffer
	logger := zerolog.New(&buf)
	e := logger.Log()
	e.Str(keyTimestamp, l.now().UTC().Format(timestampLayout)).Str(keyExtension, l.extension).Str(keyStream, Stream).Str(keyEvent, event)
	var keys []string
	for k := range details {
		switch k {
		case keyTimestamp, keyExtension, keyStream, keyEvent:
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		e.RawJSON(k, l.renderGeneric(k, details[k]))
	}
	e.Send()
	return buf.String()
}

func TestWriteMatchesGenericLines(t *testing.T) {
	odd := map[string]any{
		"event":         "forged",
		"we\"ird <key>": "v",
		"é":             []string{"x"},
		"\xff":          "invalid key",
		"token":         map[string]any{"a": 1},
		"nothing":       nil,
		"error":         errors.New("disk on fire"),
		"ch":            make(chan int),
	}
	entries := []benchEntry{
		{ForwardedAutoApproved, autoApprovedDetails()},
		{ForwardedApproved, approvedDetails()},
		{RequestDenied, forwardedDetails()},
		{ForwardingWarning, odd},
		{ForwardingWarning, nil},
	}
	for _, width := range []int{3, 40, DefaultFieldWidth} {
		for _, e := range entries {
			var buf bytes.Buffer
			l := newLog(&buf, nil, config{width: width, extension: DefaultExtension, now: fixedClock})
			if err := l.Write(e.event, e.details); err != nil {
				t.Fatal(err)
			}
			if want := genericLine(l, e.event, e.details); buf.String() != want {
				t.Errorf("width %d, %s:\ngot  %s\nwant %s", width, e.event, buf.String(), want)
			}
		}
	}
}

func TestSensitiveMemoIsBounded(t *testing.T) {
	for i := range 2 * memoMaxKeys {
		key := fmt.Sprintf("untrusted-%d", i)
		if IsSensitiveKey(key) {
			t.Fatalf("%s judged sensitive", key)
		}
	}
	long := strings.Repeat("x", memoMaxKeyLen) + "Token"
	for range 2 { // the second time from the memo, were it remembered
		if !IsSensitiveKey(long) {
			t.Errorf("%s not judged sensitive", long)
		}
	}
	m := sensitiveMemo.m.Load()
	if m == nil {
		t.Fatal("the memo remembered nothing")
	}
	if len(*m) > memoMaxKeys {
		t.Fatalf("memo holds %d keys, bound %d", len(*m), memoMaxKeys)
	}
	if _, ok := (*m)[long]; ok {
		t.Error("a key over the length bound was remembered")
	}
	// Past the bound, keys are still judged, by the regexps.
	for _, key := range []string{"freshToken", "fresh_key", "freshmonkey"} {
		if IsSensitiveKey(key) != matchSensitive(key) {
			t.Errorf("%s judged differently past the bound", key)
		}
	}
}

// FuzzRenderMatchesGeneric feeds arbitrary bytes to the fast path as JSON
// text (as a json.RawMessage and as the trees encoding/json decodes it
// into), as a string and as an error message, under an arbitrary key and
// width, and requires the generic path's bytes whenever it accepts.
func FuzzRenderMatchesGeneric(f *testing.F) {
	seeds := []string{
		`{"b":[1,2.5,-0,1E+2],"a":{"token":"t","n":null}}`,
		`"esc \" \\ \/ \b \f \n \r \t \u00e9 \u0000 \u2028"`,
		`{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"authorizer","name":"j","verdict":"deny","reason":"r"}}`,
		`[true,false,null,{},[],"",12345678901234567890]`,
		`{"a":1,"a":2}`,
		`"\ud83d\ude00"`,
		"\"\xff\"",
		`1e400`,
		strings.Repeat("日本", 20),
	}
	for i, s := range seeds {
		f.Add("detail", []byte(s), uint16(i*7))
		f.Add("token", []byte(s), uint16(1000))
	}
	f.Fuzz(func(t *testing.T, key string, text []byte, w uint16) {
		width := int(w)%1100 + 1
		checkSame(t, width, key, json.RawMessage(text))
		checkSame(t, width, key, string(text))
		checkSame(t, width, key, errors.New(string(text)))
		checkSame(t, width, key, []string{string(text), key})
		for _, useNumber := range []bool{true, false} {
			dec := json.NewDecoder(bytes.NewReader(text))
			if useNumber {
				dec.UseNumber()
			}
			var tree any
			if dec.Decode(&tree) != nil {
				continue
			}
			checkSame(t, width, key, tree)
			checkSame(t, width, key, map[string]any{key: tree, "list": []any{tree, string(text)}})
		}
	})
}
