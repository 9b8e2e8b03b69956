package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/iotest"

	"github.com/seed6639df8c/courier/authorizer"
)

// FuzzShadow feeds arbitrary bytes to the shadow report, with the real
// limits and with small ones. It must never fail or panic, and every
// link's counts must add up: the table to its verdicts, allow and deny to
// what it would have decided, the codes to its defers.
func FuzzShadow(f *testing.F) {
	fixture, err := os.ReadFile(filepath.Join("testdata", "shadow-review.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(fixture)
	for _, s := range []string{
		"",
		`{"event":"authorizer_link.shadow","name":"j","verdict":"defer","code":"x_1"}`,
		`{"event":"authorizer_chain_resolved","requestId":"a"}` + "\n" + `{"event":"authorizer_link.shadow","requestId":"a","name":"j","verdict":"allow"}` + "\n" +
			`{"event":"permission_request.approved","requestId":"a"}` + "\n" + `{"event":"forwarded_permission.denied","requestId":"a","requestSha256":"d","approved":false}`,
		`{"event":"authorizer_link.shadow","requestId":"a","name":"j","verdict":"deny"}` + "\n" + `{"event":"authorizer_chain_resolved","requestId":"a"}` + "\n" +
			`{"event":"authorizer_link.shadow","requestId":"a","name":"j","verdict":"deny"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, limits := range []struct{ maxLine, bufSize int }{{MaxLineBytes, readBufferSize}, {40, 16}} {
			r, err := shadow(bytes.NewReader(data), limits.maxLine, limits.bufSize)
			if err != nil {
				t.Fatalf("shadow(%+v): %v", limits, err)
			}
			for _, l := range r.Links {
				if l.Name == "" {
					t.Fatalf("a link without a name: %+v", l)
				}
				if got := l.Allow.total() + l.Deny.total() + l.Defer.total(); got != l.Verdicts {
					t.Fatalf("%q: table sums to %d, verdicts %d", l.Name, got, l.Verdicts)
				}
				if l.WouldDecide != l.Allow.total()+l.Deny.total() || l.HumanOtherwise > l.HumanDecided || l.HumanDecided > l.WouldDecide || l.Failed > l.Verdicts {
					t.Fatalf("%q: %+v", l.Name, l)
				}
				codes := 0
				for _, c := range l.DeferCodes {
					if c.Code != authorizer.CleanCode(c.Code) {
						t.Fatalf("%q: code %q", l.Name, c.Code)
					}
					codes += c.Count
				}
				if codes != l.Defer.total() {
					t.Fatalf("%q: codes sum to %d, defers %d", l.Name, codes, l.Defer.total())
				}
			}
			split, err := shadow(iotest.OneByteReader(bytes.NewReader(data)), limits.maxLine, limits.bufSize)
			if err != nil || !reflect.DeepEqual(split, r) {
				t.Fatalf("one-byte reads changed the report (%v):\n%+v\n%+v", err, split, r)
			}
			var b bytes.Buffer
			if err := r.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
		}
	})
}
