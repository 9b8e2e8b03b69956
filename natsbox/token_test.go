package natsbox

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/mailbox"
)

func TestToken(t *testing.T) {
	b64 := func(s string) string { return "_" + base64.RawURLEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name, id, want string
		wantErr        bool
	}{
		{name: "uuid", id: "0b7f3c1e-9a52-4d0e-8f7a-2c1d5e6f7a8b", want: "0b7f3c1e-9a52-4d0e-8f7a-2c1d5e6f7a8b"},
		{name: "underscore inside", id: "a_b-C9", want: "a_b-C9"},
		{name: "one char", id: "x", want: "x"},
		{name: "128 plain chars", id: strings.Repeat("a", 128), want: strings.Repeat("a", 128)},
		{name: "129 chars encoded", id: strings.Repeat("a", 129), want: b64(strings.Repeat("a", 129))},
		{name: "dot", id: "a.b", want: b64("a.b")},
		{name: "wildcards", id: "*>", want: b64("*>")},
		{name: "leading underscore", id: "_x", want: b64("_x")},
		{name: "looks encoded", id: "_YQ", want: b64("_YQ")},
		{name: "leading dash", id: "-x", want: b64("-x")},
		{name: "space", id: "a b", want: b64("a b")},
		{name: "unicode", id: "sessión-ü", want: b64("sessión-ü")},
		{name: "invalid utf8", id: "\xff\xfe", want: b64("\xff\xfe")},
		{name: "149 bytes fits", id: strings.Repeat(".", 149), want: b64(strings.Repeat(".", 149))},
		{name: "150 bytes too long", id: strings.Repeat(".", 150), wantErr: true},
		{name: "empty", id: "", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Token(tc.id)
			if tc.wantErr {
				if !errors.Is(err, ErrBadToken) {
					t.Fatalf("Token(%q) = %q, %v; want ErrBadToken", tc.id, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Token(%q) = %q, %v; want %q", tc.id, got, err, tc.want)
			}
			checkSubjectToken(t, got)
			back, err := DecodeToken(got)
			if err != nil || back != tc.id {
				t.Fatalf("DecodeToken(%q) = %q, %v; want %q", got, back, err, tc.id)
			}
		})
	}
}

func TestDecodeTokenRefusesNonCanonical(t *testing.T) {
	for _, tok := range []string{
		"", "_", "a.b", "_YQ", // "_YQ" is base64 of "a", whose token is "a"
		"_YR",   // non-zero padding bits
		"_YQ==", // padding
		"_!!", "-x", "*", ">",
		"_" + strings.Repeat("A", 200),
	} {
		if id, err := DecodeToken(tok); !errors.Is(err, ErrBadToken) {
			t.Errorf("DecodeToken(%q) = %q, %v; want ErrBadToken", tok, id, err)
		}
	}
}

// checkSubjectToken fails unless tok is one valid NATS subject token.
func checkSubjectToken(t *testing.T, tok string) {
	t.Helper()
	if tok == "" || len(tok) > MaxTokenLen {
		t.Fatalf("token %q: length %d not in 1..%d", tok, len(tok), MaxTokenLen)
	}
	for _, r := range tok {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		if !ok {
			t.Fatalf("token %q has %q, not a safe subject token byte", tok, r)
		}
	}
}

// FuzzToken proves Token injective on its domain (DecodeToken inverts it,
// and two ids never share a token) and every token a valid single subject
// token.
func FuzzToken(f *testing.F) {
	for _, s := range []string{"a", "a.b", "_a", "YQ", "_YQ", "sessión", "\xff", strings.Repeat("z", 128), strings.Repeat("z", 129)} {
		f.Add(s, s+"x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ta, errA := Token(a)
		tb, errB := Token(b)
		if errA == nil {
			checkSubjectToken(t, ta)
			if back, err := DecodeToken(ta); err != nil || back != a {
				t.Fatalf("DecodeToken(Token(%q)=%q) = %q, %v", a, ta, back, err)
			}
		} else if a != "" && 1+base64.RawURLEncoding.EncodedLen(len(a)) <= MaxTokenLen {
			t.Fatalf("Token(%q) refused an id in its domain: %v", a, errA)
		}
		if errA == nil && errB == nil && a != b && ta == tb {
			t.Fatalf("Token(%q) == Token(%q) == %q", a, b, ta)
		}
		// Whatever DecodeToken accepts is Token's image.
		if id, err := DecodeToken(a); err == nil {
			if again, err := Token(id); err != nil || again != a {
				t.Fatalf("DecodeToken(%q) = %q but Token of it = %q, %v", a, id, again, err)
			}
		}
	})
}

func TestCheckOwner(t *testing.T) {
	for _, o := range []string{"alice", "Bob-2", "a_b", "x", strings.Repeat("o", 64)} {
		if err := CheckOwner(o); err != nil {
			t.Errorf("CheckOwner(%q) = %v, want nil", o, err)
		}
	}
	for _, o := range []string{"", "_a", "-a", "a.b", "a*", ">", "a b", "ü", strings.Repeat("o", 65)} {
		if err := CheckOwner(o); !errors.Is(err, ErrBadToken) {
			t.Errorf("CheckOwner(%q) = %v, want ErrBadToken", o, err)
		}
	}
}

func TestSubjectsRoundTrip(t *testing.T) {
	builders := map[string]func(s, o, r string) (string, error){
		KindRequest: RequestSubject, KindResponse: ResponseSubject, KindGone: GoneSubject,
	}
	ids := []struct{ session, owner, req string }{
		{"s1", "alice", "r1"},
		{"sess.with.dots", "bob", "req>*"},
		{"_x", "o", strings.Repeat("é", 70)},
	}
	for kind, build := range builders {
		for _, id := range ids {
			subj, err := build(id.session, id.owner, id.req)
			if err != nil {
				t.Fatalf("%s(%q, %q, %q): %v", kind, id.session, id.owner, id.req, err)
			}
			k, st, o, rt, err := ParseSubject(subj)
			if err != nil || k != kind || o != id.owner {
				t.Fatalf("ParseSubject(%q) = %q, %q, %q, %q, %v", subj, k, st, o, rt, err)
			}
			s, err1 := DecodeToken(st)
			r, err2 := DecodeToken(rt)
			if err1 != nil || err2 != nil || s != id.session || r != id.req {
				t.Fatalf("ParseSubject(%q) ids = %q, %q (%v, %v); want %q, %q", subj, s, r, err1, err2, id.session, id.req)
			}
			msgID, err := MsgID(id.session, id.owner, id.req)
			if err != nil || !strings.HasSuffix(subj, "."+msgID) || strings.Count(msgID, ".") != 2 {
				t.Fatalf("MsgID = %q, %v; want the S.O.R suffix of %q", msgID, err, subj)
			}
		}
	}
	if f, err := SessionRequestFilter("a.b"); err != nil || f != "courier.req._YS5i.>" {
		t.Errorf("SessionRequestFilter = %q, %v", f, err)
	}
	if f, err := SessionGoneFilter("s1"); err != nil || f != "courier.gone.s1.>" {
		t.Errorf("SessionGoneFilter = %q, %v", f, err)
	}
}

func TestSubjectBuildersRefuse(t *testing.T) {
	for _, c := range [][3]string{{"", "alice", "r"}, {"s", "", "r"}, {"s", "a.b", "r"}, {"s", "alice", ""}} {
		if s, err := RequestSubject(c[0], c[1], c[2]); !errors.Is(err, ErrBadToken) {
			t.Errorf("RequestSubject%q = %q, %v; want ErrBadToken", c, s, err)
		}
	}
	if _, err := SessionRequestFilter(""); !errors.Is(err, ErrBadToken) {
		t.Errorf("SessionRequestFilter(\"\") = %v, want ErrBadToken", err)
	}
}

func TestParseSubjectRefuses(t *testing.T) {
	for _, s := range []string{
		"", "courier", "courier.req.s.alice", "courier.req.s.alice.r.x", "nats.req.s.alice.r",
		"courier.put.s.alice.r", "courier.req._YQ.alice.r", "courier.req.s._alice.r",
		"courier.req.s.alice.*", "courier.req.*.alice.r", "courier.resp.s.alice.>",
	} {
		if k, _, _, _, err := ParseSubject(s); !errors.Is(err, ErrBadToken) {
			t.Errorf("ParseSubject(%q) = %q, %v; want ErrBadToken", s, k, err)
		}
	}
}

// The copies of the mailbox's constants must stay equal to them.
func TestConstantsMatchMailbox(t *testing.T) {
	if MaxMsgSize != mailbox.MaxFileSize {
		t.Errorf("MaxMsgSize = %d, mailbox.MaxFileSize = %d", MaxMsgSize, mailbox.MaxFileSize)
	}
	if HeartbeatInterval != mailbox.HeartbeatInterval || HeartbeatStaleAfter != mailbox.HeartbeatStaleAfter {
		t.Errorf("heartbeat timing %s/%s, mailbox %s/%s", HeartbeatInterval, HeartbeatStaleAfter, mailbox.HeartbeatInterval, mailbox.HeartbeatStaleAfter)
	}
}
