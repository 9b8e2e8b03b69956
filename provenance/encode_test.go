package provenance

import (
	"encoding/json"
	"testing"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// awkward are strings whose quoting encoding/json does in its own way:
// escapes, HTML characters left alone, invalid UTF-8, U+2028 and U+2029.
var awkward = []string{
	"", "git status *", `a "quoted" \\ path`, "<b>&amp;</b>", "tab\there\nnew\rline\b\f\x00\x1f\x7f",
	"bad \xff\xfe utf-8 \xe2\x82", "line\u2028sep\u2029para", "ünïcödé 日本 🎉",
}

// sourcesOf builds one Source of every kind from s, nullable members set
// and not, and Forwarded frames around them.
func sourcesOf(s string) []Source {
	p := Str(s)
	leaves := []Source{
		User{Via: Via(s)}, User{Via: ViaDialog},
		Authorizer{Name: s, Verdict: AuthorizerVerdict(s), Reason: p}, Authorizer{Name: s, Verdict: VerdictDeny},
		Rule{Surface: s, Pattern: p, Origin: p}, Rule{Surface: s},
		SessionApproval{Surface: s, Pattern: p}, SessionApproval{Surface: s},
		Yolo{Pattern: p}, Yolo{},
		InfrastructureRead{},
		Unavailable{Reason: s}, GateError{Reason: s},
	}
	all := append([]Source{}, leaves...)
	for _, l := range leaves {
		all = append(all, Forwarded{ResponderSessionID: p, Decision: l}, Nest(nil, Nest(p, l)))
	}
	return append(all, Forwarded{}, Forwarded{ResponderSessionID: p})
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	for _, s := range awkward {
		for _, src := range sourcesOf(s) {
			checkAppendJSON(t, src)
		}
	}
	checkAppendJSON(t, nil)
}

// TestAppendJSONPointers: a pointer to a kind implements Source too (its
// methods have value receivers). AppendJSON writes a nil one as null, as
// json.Marshal of it does (encoding/json panics on one inside a value, as
// it did before AppendJSON: it calls the value method).
func TestAppendJSONPointers(t *testing.T) {
	rule := Rule{Surface: "bash", Pattern: Str("git *")}
	for _, tt := range []struct {
		name string
		src  Source
		want string
	}{
		{"pointer", &rule, `{"kind":"rule","surface":"bash","pattern":"git *","origin":null}`},
		{"nil pointer", (*Rule)(nil), `null`},
		{"forwarded pointer", Forwarded{Decision: &rule}, `{"kind":"forwarded","responderSessionId":null,"decision":{"kind":"rule","surface":"bash","pattern":"git *","origin":null}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendJSON(nil, tt.src)); got != tt.want {
				t.Errorf("AppendJSON = %s\nwant        %s", got, tt.want)
			}
			if tt.name == "nil pointer" {
				return
			}
			got, err := marshal(struct{ S Source }{tt.src})
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"S":` + tt.want + `}`; string(got) != want {
				t.Errorf("encoding/json = %s\nwant          %s", got, want)
			}
		})
	}
}

// checkAppendJSON holds AppendJSON, MarshalJSON and encoding/json's
// writing of src inside a value to the bytes encoding/json wrote for each
// kind before AppendJSON.
func checkAppendJSON(t *testing.T, src Source) {
	t.Helper()
	want := string(viaReflection(t, src))
	prefix := []byte("[1,")
	got := AppendJSON(prefix, src)
	if string(got[:len(prefix)]) != "[1," || string(got[len(prefix):]) != want {
		t.Fatalf("AppendJSON(%#v) = %s\nwant %s", src, got, want)
	}
	if src != nil {
		m, err := src.MarshalJSON()
		if err != nil || string(m) != want {
			t.Fatalf("MarshalJSON(%#v) = %s, %v\nwant %s", src, m, err, want)
		}
	}
	in, err := marshal(struct {
		D Source `json:"decidedBy"`
	}{src})
	if err != nil || string(in) != `{"decidedBy":`+want+`}` {
		t.Fatalf("encoding/json inside a value = %s, %v\nwant {\"decidedBy\":%s}", in, err, want)
	}
	if !json.Valid([]byte(want)) {
		t.Fatalf("%s is not JSON", want)
	}
}

// FuzzAppendJSON: for any strings, every kind AppendJSON writes is what
// encoding/json wrote for it.
func FuzzAppendJSON(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, s, uint8(0))
	}
	f.Add("bash", "git status *", uint8(3))
	f.Fuzz(func(t *testing.T, a, b string, pick uint8) {
		srcs := append(sourcesOf(a), sourcesOf(b)...)
		src := srcs[int(pick)%len(srcs)]
		checkAppendJSON(t, src)
		checkAppendJSON(t, Forwarded{ResponderSessionID: Str(b), Decision: src})
	})
}

// TestAppendJSONString: the quoting of a lone string (strictjson.AppendString,
// which AppendJSON quotes with) is encoding/json's,
// HTML escaping off.
func TestAppendJSONString(t *testing.T) {
	for _, s := range awkward {
		want, err := marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := strictjson.AppendString(nil, s); string(got) != string(want) {
			t.Errorf("strictjson.AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}
