package judge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/authorizer"
)

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     answer
		bad      bool
	}{
		{name: "allow", in: `{"verdict":"allow","reason":"asked for","code":""}`, want: answer{Kind: authorizer.Allow, Reason: "asked for"}},
		{name: "deny with code", in: `{"verdict":"deny","reason":"no","code":"destructive"}`, want: answer{Kind: authorizer.Deny, Reason: "no", Code: "destructive"}},
		{name: "defer without code", in: " \n{\"verdict\": \"defer\", \"reason\": \"unsure\"}\n", want: answer{Kind: authorizer.Defer, Reason: "unsure"}},
		{name: "code not snake case is dropped", in: `{"verdict":"deny","reason":"r","code":"Not Snake"}`, want: answer{Kind: authorizer.Deny, Reason: "r"}},
		{name: "escaped text", in: `{"verdict":"deny","reason":"\u00e9 \"q\"","code":"x"}`, want: answer{Kind: authorizer.Deny, Reason: `é "q"`, Code: "x"}},
		{name: "code fence", in: "```json\n{\"verdict\":\"allow\",\"reason\":\"r\"}\n```", bad: true},
		{name: "prose before", in: `Sure: {"verdict":"allow","reason":"r"}`, bad: true},
		{name: "prose after", in: `{"verdict":"allow","reason":"r"} hope this helps`, bad: true},
		{name: "two objects", in: `{"verdict":"deny","reason":"r"}{"verdict":"allow","reason":"r"}`, bad: true},
		{name: "unknown key", in: `{"verdict":"allow","reason":"r","confidence":"high"}`, bad: true},
		{name: "key in another case", in: `{"Verdict":"allow","reason":"r"}`, bad: true},
		{name: "repeated key", in: `{"verdict":"deny","verdict":"allow","reason":"r"}`, bad: true},
		{name: "repeated key folded", in: `{"verdict":"deny","VERDICT":"allow","reason":"r"}`, bad: true},
		{name: "verdict outside the schema", in: `{"verdict":"approve","reason":"r"}`, bad: true},
		{name: "verdict upper case", in: `{"verdict":"ALLOW","reason":"r"}`, bad: true},
		{name: "verdict not a string", in: `{"verdict":true,"reason":"r"}`, bad: true},
		{name: "reason missing", in: `{"verdict":"allow"}`, bad: true},
		{name: "reason null", in: `{"verdict":"allow","reason":null}`, bad: true},
		{name: "reason object", in: `{"verdict":"allow","reason":{"text":"r"}}`, bad: true},
		{name: "code number", in: `{"verdict":"deny","reason":"r","code":7}`, bad: true},
		{name: "array", in: `[{"verdict":"allow","reason":"r"}]`, bad: true},
		{name: "empty", in: ``, bad: true},
		{name: "truncated", in: `{"verdict":"allow","reason":"r`, bad: true},
		{name: "oversized", in: `{"verdict":"deny","reason":"` + strings.Repeat("x", MaxAnswerBytes) + `"}`, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAnswer(tc.in)
			if tc.bad {
				if err == nil || !errors.Is(err, errMalformed) {
					t.Fatalf("parseAnswer(%q) = %+v, %v; want a malformed verdict", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("parseAnswer(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzParseAnswer holds the parser to its contract on any text: it
// accepts only a lone JSON object of the three keys with a known verdict,
// which encoding/json reads the same way, and its code is always clean.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		`{"verdict":"allow","reason":"r","code":""}`,
		`{"verdict":"deny","reason":"no","code":"destructive"}`,
		`{"verdict":"defer","reason":"?"}`,
		`{"verdict":"deny","VERDICT":"allow","reason":"r"}`,
		"```json\n{}\n```",
		`{"verdict":"allow","reason":"\ud800"}`,
		` {"reason":"","verdict":"defer","code":"Bad"} `,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := parseAnswer(s)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v does not wrap errMalformed", err)
			}
			return
		}
		if len(s) > MaxAnswerBytes {
			t.Fatalf("accepted %d bytes", len(s))
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(s), &doc); err != nil {
			t.Fatalf("accepted %q, which encoding/json refuses: %v", s, err)
		}
		for k := range doc {
			if k != "verdict" && k != "reason" && k != "code" {
				t.Fatalf("accepted key %q", k)
			}
		}
		if doc["verdict"] != a.Kind.String() {
			t.Fatalf("verdict %v read as %v", doc["verdict"], a.Kind)
		}
		if doc["reason"] != a.Reason && utf8.ValidString(s) {
			t.Fatalf("reason %q read as %q", doc["reason"], a.Reason)
		}
		if a.Code != authorizer.CleanCode(a.Code) {
			t.Fatalf("code %q is not clean", a.Code)
		}
	})
}
