package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// agreementCases are documents on which the scanner must say exactly what
// the Decoder.Token walk it replaced said, error text included: every
// state's misplaced bytes, truncation in each kind of scalar, keys equal
// only after decoding, and the nesting bound.
var agreementCases = []string{
	``, ` `, `{}`, `[]`, `1`, `-0.5e+10`, `"s"`, `true`, `false`, `null`, `{"a":1}`,
	`{`, `[`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,`, `[1`, `[1,`, `"abc`, `tru`, `-`, `1.`, `1e`, `1e+`,
	`{]`, `{,`, `{:`, `{1:2}`, `{{`, `{[`, `{"a" 1}`, `{"a"]`, `{"a"}`, `{"a",`, `{"a":}`, `{"a":]`,
	`{"a":,`, `{"a"::`, `{"a":1]`, `{"a":1 "b":2}`, `{"a":1,}`, `{"a":1,]`, `{"a":1,,`, `{"a":1,1}`,
	`[}`, `[:`, `[,`, `[1,]`, `[1,}`, `[1}`, `[1 2]`, `[1:`, `[1"a"]`, `[01]`, `[1x]`, `[-x]`, `[1.x]`,
	`[1ex]`, `[1e+x]`, `[tx]`, `[trx]`, `[trux]`, `[fx]`, `[nx]`, `[nux]`, `[nulx]`, `[truex]`,
	`]`, `}`, `:`, `,`, `x`, "\x00", "\xff", "\ufeff{}", `{} {}`, `{}x`, `{}]`, `1 2`, "{}\n\t ",
	`"\x"`, `"\u12"`, `"\u12g4"`, "\"a\x01\"", "\"a\n\"", `"\`, `"\u`, `"\'"`,
	`{"a":1,"a":2}`, `{"a":1,"A":2}`, `{"A":{"b":1,"B":2}}`, `[{"a":1},{"a":2}]`,
	`{"a":1,"\u0041":2}`, `{"\u0061":1,"A":2}`, `{"k":1,"\u212a":2}`, "{\"k\":1,\"\u212a\":2}",
	"{\"\xff\":1,\"\xfe\":2}", `{"\ud800":1,"\udc00":2}`, `{"\ud800\udc00":1,"\ud800\udc01":2}`,
	"{\"\\ud83d\\ude00\":1,\"\U0001F600\":2}", `{"\ud800x":1,"\ufffdX":2}`, "{\"\xed\xa0\x80\":1,\"\ufffd\ufffd\ufffd\":2}",
	`{"a/b":1,"a\/B":2}`, `{"\b\f\n\r\t":1,"\u0008\u000C\u000a\u000D\u0009":2}`, `{"é":1,"É":2}`, `{"é":1,"e":2}`,
	`{"ß":1,"ẞ":2}`, `{"σ":1,"ς":2}`, `{"a":1,"b":{"a":2},"A":3}`, `{"a":1,"b":[{"A":2}],"c":3}`,
	`{"x":1,"x"`, `{"x":1,"X"x`,
}

func TestCheckAgreesWithOracle(t *testing.T) {
	cases := append([]string(nil), agreementCases...)
	cases = append(cases,
		strings.Repeat("[", MaxNesting)+strings.Repeat("]", MaxNesting),
		strings.Repeat("[", MaxNesting+1)+strings.Repeat("]", MaxNesting+1),
		strings.Repeat("[", MaxNesting+1)+"x",
		strings.Repeat(`{"a":`, MaxNesting)+"1"+strings.Repeat("}", MaxNesting),
		strings.Repeat(`{"a":`, MaxNesting+1)+"1",
		manyKeys(maxLinearKeys-1, ""), manyKeys(maxLinearKeys, ""), manyKeys(maxLinearKeys+1, ""),
		manyKeys(200, ""), manyKeys(200, `"K7":0`), manyKeys(200, `"k150":0`),
		manyKeys(maxLinearKeys, `"K3":0`), manyKeys(maxLinearKeys+1, `"K3":0`),
		`{"big":`+manyKeys(100, "")+`,"BIG":1}`, `[`+manyKeys(100, "")+`,`+manyKeys(100, `"k1":1`)+`]`,
	)
	for _, doc := range cases {
		assertAgrees(t, []byte(doc))
	}
}

// manyKeys is an object with n keys k0…k(n-1), then extra if not empty.
func manyKeys(n int, extra string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	if extra != "" {
		b.WriteString("," + extra)
	}
	b.WriteString("}")
	return b.String()
}

func assertAgrees(t *testing.T, data []byte) {
	t.Helper()
	got, want := Check(data), checkOracle(data)
	if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
		t.Fatalf("Check(%q)\n got %v\nwant %v", data, got, want)
	}
	// Valid is Check without the comparison of keys: it accepts what
	// Check accepts, and agrees with encoding/json's Valid on documents
	// that cannot nest past the bound.
	v := Valid(data)
	if got == nil && !v {
		t.Fatalf("Valid(%q) = false, Check accepts it", data)
	}
	if bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) <= MaxNesting && v != json.Valid(data) {
		t.Fatalf("Valid(%q) = %v, json.Valid %v", data, v, json.Valid(data))
	}
	if got != nil && !errors.Is(got, ErrInvalid) {
		t.Fatalf("Check(%q) = %v does not wrap ErrInvalid", data, got)
	}
}

// FuzzCheckAgreesWithOracle compares the scanner with the Decoder.Token
// walk it replaced (oracle_test.go) on arbitrary bytes: the same verdict
// and the same error text.
func FuzzCheckAgreesWithOracle(f *testing.F) {
	for _, doc := range agreementCases {
		f.Add([]byte(doc))
	}
	f.Add([]byte(`{"id":"perm-1","createdAt":1,"requesterSessionId":"c","targetSessionId":"p","requesterAgentName":"a","payload":{"tool":"bash","args":["ls","-la"],"n":-1.5e3,"ok":true,"x":null},"accessIntent":{"surface":"bash","matchValues":["ls -la"],"boundaryValue":null,"principal":{"sessionId":"c","agentName":"a"}}}`))
	f.Add([]byte(manyKeys(maxLinearKeys+2, `"K5":0`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		assertAgrees(t, data)
	})
}

func TestCheckAllocatesNothingOnAValidDocument(t *testing.T) {
	doc := []byte(`{"id":"perm-1","createdAt":1,"payload":{"tool":"bash","args":["ls","-la"],"é":"ü\n","n":-1.5e3},"list":[{"a":1},{"A":1}],"x":null}`)
	if n := testing.AllocsPerRun(100, func() {
		if err := Check(doc); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Check allocated %v times, want 0", n)
	}
}

func BenchmarkCheck(b *testing.B) {
	for _, bc := range []struct{ name, doc string }{
		{"request", `{"id":"perm-1","createdAt":1757000000000,"requesterSessionId":"child-session","targetSessionId":"parent-session","requesterAgentName":"reviewer","payload":{"tool":"bash","args":{"command":"git status --short"},"cwd":"/home/u/project"},"source":"tool_call","surface":"bash","value":"git status --short","accessIntent":{"surface":"bash","matchValues":["git status --short"],"boundaryValue":null,"requesterCwd":"/home/u/project","principal":{"sessionId":"child-session","agentName":"reviewer"}},"requesterPid":4242}`},
		{"keys-200", manyKeys(200, "")},
	} {
		data := []byte(bc.doc)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				_ = Check(data)
			}
		})
		b.Run(bc.name+"/oracle", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				_ = checkOracle(data)
			}
		})
	}
}
