package provenance_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// This file is a strict reader of seed 000's DecisionSource, written out
// by hand from the seed's TypeScript (shared/seeds/000_*.txt) and
// deliberately sharing nothing with courier's tolerant Decode: where Decode
// accepts what an older or newer writer might send, seedMember accepts only
// what the seed's literal types allow, member by member, as a pi 25.x child
// reads it (a value outside the union makes its whole decidedBy absent).
//
//	export type DecisionSource =
//	  | { kind: "user"; via: "dialog" | "select" }
//	  | { kind: "authorizer"; name: string; verdict: "allow" | "deny"; reason: string | null }
//	  | { kind: "rule"; surface: string; pattern: string | null; origin: string | null }
//	  | { kind: "session_approval"; surface: string; pattern: string | null }
//	  | { kind: "yolo"; pattern: string | null }
//	  | { kind: "infrastructure_read" }
//	  | { kind: "unavailable"; reason: string }
//	  | { kind: "gate_error"; reason: string }
//	  | { kind: "forwarded"; responderSessionId: string | null; decision: DecisionSource | null };
//
// Beyond the types, courier writes every member of a variant, nullable
// ones as null, and no other member; the reader holds it to that.

// seedMaxForwarded is pi's MAX_DECISION_SOURCE_DEPTH, the most forwarded
// frames its guard reads (shared/SPEC.md §3), written out here rather than
// taken from the package under test.
const seedMaxForwarded = 4

// seedField is one member of a variant: its name and the JSON values the
// seed's type admits.
type seedField struct {
	name string
	// check reports why v is not of the member's type, or "".
	check func(v any, depth int) string
}

func literal(values ...string) func(any, int) string {
	return func(v any, _ int) string {
		s, ok := v.(string)
		if !ok || !slices.Contains(values, s) {
			return fmt.Sprintf("%#v is not one of %q", v, values)
		}
		return ""
	}
}

func str(v any, _ int) string {
	if _, ok := v.(string); !ok {
		return fmt.Sprintf("%#v is not a string", v)
	}
	return ""
}

func strOrNull(v any, depth int) string {
	if v == nil {
		return ""
	}
	return str(v, depth)
}

func sourceOrNull(v any, depth int) string {
	if v == nil {
		return ""
	}
	if depth >= seedMaxForwarded {
		return fmt.Sprintf("more than %d forwarded frames", seedMaxForwarded)
	}
	return checkSeedSource(v, depth+1)
}

// seedVariants is the union, kind by kind, with each variant's members
// other than kind. It is set in init because the forwarded variant
// refers back to the union.
var seedVariants map[string][]seedField

func init() {
	seedVariants = map[string][]seedField{
		"user":                {{"via", literal("dialog", "select")}},
		"authorizer":          {{"name", str}, {"verdict", literal("allow", "deny")}, {"reason", strOrNull}},
		"rule":                {{"surface", str}, {"pattern", strOrNull}, {"origin", strOrNull}},
		"session_approval":    {{"surface", str}, {"pattern", strOrNull}},
		"yolo":                {{"pattern", strOrNull}},
		"infrastructure_read": {},
		"unavailable":         {{"reason", str}},
		"gate_error":          {{"reason", str}},
		"forwarded":           {{"responderSessionId", strOrNull}, {"decision", sourceOrNull}},
	}
}

// checkSeedSource reports why v (a decoded JSON value) is not a seed
// DecisionSource, or "". depth counts the forwarded frames around v.
func checkSeedSource(v any, depth int) string {
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Sprintf("%#v is not an object", v)
	}
	kind, ok := obj["kind"].(string)
	if !ok {
		return fmt.Sprintf("kind %#v is not a string", obj["kind"])
	}
	fields, ok := seedVariants[kind]
	if !ok {
		return fmt.Sprintf("kind %q is not in the union", kind)
	}
	want := []string{"kind"}
	for _, f := range fields {
		want = append(want, f.name)
		got, present := obj[f.name]
		if !present {
			return fmt.Sprintf("%s: member %q is missing", kind, f.name)
		}
		if why := f.check(got, depth); why != "" {
			return fmt.Sprintf("%s.%s: %s", kind, f.name, why)
		}
	}
	for name := range obj {
		if !slices.Contains(want, name) {
			return fmt.Sprintf("%s: member %q is not in the seed's type", kind, name)
		}
	}
	return ""
}

// seedMember reports why raw, a decidedBy as written, is not a member of
// the seed's union; nil when it is.
func seedMember(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("decidedBy %s: %w", raw, err)
	}
	if dec.More() {
		return fmt.Errorf("decidedBy %s: trailing data", raw)
	}
	if why := checkSeedSource(v, 0); why != "" {
		return fmt.Errorf("decidedBy %s: %s", raw, why)
	}
	return nil
}

// seedResponse reports why data, a response file as written, does not
// carry a decidedBy that is a member of the seed's union. courier always
// writes one, so a missing decidedBy fails too.
func seedResponse(data []byte) error {
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(data, &resp); err != nil {
		return fmt.Errorf("response %s: %w", data, err)
	}
	raw, ok := resp["decidedBy"]
	if !ok {
		return fmt.Errorf("response %s: no decidedBy", data)
	}
	return seedMember(raw)
}

// TestSeedReader pins the strict reader itself: it takes every variant as
// the seed types it and refuses what the seed's types do not admit,
// courier's old `via: "terminal"` first.
func TestSeedReader(t *testing.T) {
	nest := func(n int) string {
		s := `{"kind":"infrastructure_read"}`
		for range n {
			s = `{"kind":"forwarded","responderSessionId":"hop","decision":` + s + `}`
		}
		return s
	}
	tests := []struct {
		raw  string
		want string // "" for a member, else a part of the refusal
	}{
		{`{"kind":"user","via":"dialog"}`, ""},
		{`{"kind":"user","via":"select"}`, ""},
		{`{"kind":"authorizer","name":"judge","verdict":"deny","reason":null}`, ""},
		{`{"kind":"rule","surface":"bash","pattern":"git *","origin":"global"}`, ""},
		{`{"kind":"session_approval","surface":"bash","pattern":null}`, ""},
		{`{"kind":"yolo","pattern":null}`, ""},
		{`{"kind":"infrastructure_read"}`, ""},
		{`{"kind":"unavailable","reason":"x"}`, ""},
		{`{"kind":"gate_error","reason":"x"}`, ""},
		{`{"kind":"forwarded","responderSessionId":null,"decision":null}`, ""},
		{nest(seedMaxForwarded), ""},

		{`{"kind":"user","via":"terminal"}`, `"terminal" is not one of`},
		{`{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"user","via":"terminal"}}`, `"terminal" is not one of`},
		{`{"kind":"user","via":"dialog","terminal":"tty"}`, `member "terminal" is not in the seed's type`},
		{`{"kind":"user"}`, `member "via" is missing`},
		{`{"kind":"rule","surface":"bash","pattern":null}`, `member "origin" is missing`},
		{`{"kind":"authorizer","name":"j","verdict":"defer","reason":null}`, `"defer" is not one of`},
		{`{"kind":"unavailable","reason":null}`, `is not a string`},
		{`{"kind":"operator"}`, `not in the union`},
		{`{"via":"dialog"}`, `kind <nil> is not a string`},
		{`null`, `is not an object`},
		{nest(seedMaxForwarded + 1), "more than 4 forwarded frames"},
	}
	for _, tt := range tests {
		err := seedMember([]byte(tt.raw))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.raw, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err = %v, want one saying %q", tt.raw, err, tt.want)
		}
	}
}
