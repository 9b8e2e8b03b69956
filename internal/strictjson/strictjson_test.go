package strictjson

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		ok   bool
	}{
		{"object", `{"a":1,"b":[1,{"c":null}]}`, true},
		{"scalar", `"x"`, true},
		{"surrounding space", " \n{}\t", true},
		{"same key in sibling objects", `[{"a":1},{"a":2}]`, true},
		{"exact duplicate", `{"a":1,"a":2}`, false},
		{"case duplicate", `{"state":"denied","STATE":"approved"}`, false},
		{"nested case duplicate", `{"x":{"y":{"Kind":1,"kind":2}}}`, false},
		{"kelvin sign folds to k", "{\"k\":1,\"\u212a\":2}", false},
		{"long s folds to s", "{\"s\":1,\"\u017f\":2}", false},
		{"distinct unicode keys", `{"é":1,"e":2}`, true},
		{"trailing value", `{} {}`, false},
		{"trailing garbage", `{}x`, false},
		{"truncated", `{"a":`, false},
		{"empty", ``, false},
		{"bom", "\ufeff{}", false},
		{"nesting at the bound", strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting), true},
		{"nesting past the bound", strings.Repeat("[", MaxNesting+1) + strings.Repeat("]", MaxNesting+1), false},
	}
	for _, tt := range tests {
		err := Check([]byte(tt.doc))
		if (err == nil) != tt.ok {
			t.Errorf("%s: Check(%q) = %v, want ok=%v", tt.name, tt.doc, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v does not wrap ErrInvalid", tt.name, err)
		}
	}
}

func TestFoldKeyAgreesWithEqualFold(t *testing.T) {
	pairs := [][2]string{{"state", "STATE"}, {"k", "\u212a"}, {"ß", "ẞ"}, {"σ", "ς"}, {"a", "b"}, {"é", "É"}, {"id", "İd"}}
	for _, p := range pairs {
		if got, want := FoldKey(p[0]) == FoldKey(p[1]), strings.EqualFold(p[0], p[1]); got != want {
			t.Errorf("FoldKey(%q)==FoldKey(%q) is %v, EqualFold says %v", p[0], p[1], got, want)
		}
	}
}

func FuzzFoldKey(f *testing.F) {
	f.Add("state", "STATE")
	f.Add("k", "\u212a")
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := FoldKey(a) == FoldKey(b), strings.EqualFold(a, b); got != want {
			t.Fatalf("FoldKey(%q)==FoldKey(%q) is %v, EqualFold says %v", a, b, got, want)
		}
	})
}
