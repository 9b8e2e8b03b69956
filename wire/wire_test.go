package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/internal/strictjson"
	"github.com/seed6639df8c/courier/provenance"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// TestWireGolden decodes every fixture in testdata/wire, renders what the
// reader made of it, and compares with the .golden file beside it.
// Fixture names say what must happen: "bad" files are rejected, every other
// file decodes, and pi-written (pi20, pi25) and courier-written files
// re-encode to the very same bytes.
func TestWireGolden(t *testing.T) {
	defer func(prev func() int64) { nowMillis = prev }(nowMillis)
	nowMillis = func() int64 { return 1800000000000 }

	inputs, err := filepath.Glob("testdata/wire/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			got, encoded, decodeErr := renderFixture(t, name, data)
			wantReject := strings.Contains(name, ".bad.")
			if wantReject != (decodeErr != nil) {
				t.Fatalf("rejected=%v, want %v (err: %v)", decodeErr != nil, wantReject, decodeErr)
			}
			if decodeErr != nil && !errors.Is(decodeErr, ErrMalformed) {
				t.Errorf("error %v does not wrap ErrMalformed", decodeErr)
			}
			if byPi := strings.Contains(name, ".pi2") || strings.Contains(name, ".courier") || strings.Contains(name, ".ok"); byPi && !bytes.Equal(encoded, data) {
				t.Errorf("re-encoding changed the bytes\n got %s\nwant %s", encoded, data)
			}
			golden := strings.TrimSuffix(in, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./mailbox -run TestWireGolden -update)", err)
			}
			if got != string(want) {
				t.Errorf("golden mismatch for %s\n--- got\n%s\n--- want\n%s", name, got, want)
			}
		})
	}
}

func renderFixture(t *testing.T, name string, data []byte) (text string, encoded []byte, decodeErr error) {
	t.Helper()
	var (
		value   any
		dropped []*FieldError
		encErr  error
	)
	switch {
	case strings.HasPrefix(name, "request."):
		var req Request
		req, dropped, decodeErr = DecodeRequest(data)
		if decodeErr == nil {
			value = req
			encoded, encErr = EncodeRequest(req)
		}
	case strings.HasPrefix(name, "response."):
		var resp Response
		resp, dropped, decodeErr = DecodeResponse(data)
		if decodeErr == nil {
			value = resp
			encoded, encErr = EncodeResponse(resp)
		}
	case strings.HasPrefix(name, "heartbeat."):
		var hb Heartbeat
		hb, decodeErr = DecodeHeartbeat(data)
		if decodeErr == nil {
			value = hb
			encoded, encErr = EncodeHeartbeat(hb)
		}
	default:
		t.Fatalf("fixture %s: name must start with request., response. or heartbeat.", name)
	}
	var b strings.Builder
	if decodeErr != nil {
		fmt.Fprintf(&b, "error: %v\n", decodeErr)
		return b.String(), nil, decodeErr
	}
	var view bytes.Buffer
	enc := json.NewEncoder(&view)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(value); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "decoded:\n%s", view.Bytes())
	for _, d := range dropped {
		fmt.Fprintf(&b, "dropped: %v\n", d)
	}
	if encErr != nil {
		fmt.Fprintf(&b, "encode error: %v\n", encErr)
	} else {
		fmt.Fprintf(&b, "encoded: %s\n", encoded)
	}
	return b.String(), encoded, nil
}

func TestValidateID(t *testing.T) {
	good := []string{"perm-6f1c2d3e-4a5b-4c6d-8e7f-0123456789ab", "1796031854191-i6uznf2b-3580", "a", "A.b_c-9", strings.Repeat("x", MaxIDLength)}
	bad := []string{"", "../x", "a/b", "a b", "é", "a\x00", "perm-1.json\n", strings.Repeat("x", MaxIDLength+1), "a\\b", "a:b"}
	for _, id := range good {
		if err := ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v, want nil", id, err)
		}
	}
	for _, id := range bad {
		if err := ValidateID(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidID", id, err)
		}
	}
}

func TestRequestRequiredFieldsNamed(t *testing.T) {
	base := map[string]any{"id": "perm-1", "createdAt": 1, "requesterSessionId": "c", "targetSessionId": "p", "requesterAgentName": "a"}
	for _, field := range []string{"id", "createdAt", "requesterSessionId", "targetSessionId", "requesterAgentName"} {
		for _, bad := range []any{nil, true, []int{1}, map[string]int{}, "delete"} {
			m := map[string]any{}
			for k, v := range base {
				m[k] = v
			}
			if bad == "delete" {
				delete(m, field)
			} else {
				m[field] = bad
			}
			data, _ := json.Marshal(m)
			_, _, err := DecodeRequest(data)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != field {
				t.Errorf("%s=%v: err = %v, want a FieldError naming %s", field, bad, err, field)
			}
		}
	}
}

func TestResponseStates(t *testing.T) {
	for _, tt := range []struct {
		approved bool
		state    State
		ok       bool
	}{
		{true, StateApproved, true},
		{true, StateApprovedForSession, true},
		{false, StateDenied, true},
		{false, StateDeniedWithReason, true},
		{false, StateApproved, false},
		{true, StateDenied, false},
		{true, StateApprovedForServingSession, false},
		{true, "approved ", false},
	} {
		_, err := EncodeResponse(Response{Approved: tt.approved, State: tt.state, ResponderSessionID: "p"})
		if (err == nil) != tt.ok {
			t.Errorf("EncodeResponse(%v, %q) err = %v, want ok=%v", tt.approved, tt.state, err, tt.ok)
		}
	}
	if _, err := EncodeResponse(Response{Approved: true, State: StateApprovedForServingSession, ResponderSessionID: "p"}); !errors.Is(err, ErrInternalState) {
		t.Errorf("internal state: err = %v, want ErrInternalState", err)
	}
}

// A 20.7.3 child reads approved, state, responderSessionId, respondedAt and
// denialReason; everything courier writes must keep those exact types.
func TestResponseReadableByPi20(t *testing.T) {
	data, err := EncodeResponse(Response{
		Approved: false, State: StateDeniedWithReason, DenialReason: "Use pnpm instead",
		ResponderSessionID: "parent", RespondedAt: 1757000000000,
		DecidedBy:         provenance.Forwarded{ResponderSessionID: provenance.Str("root"), Decision: provenance.User{Via: provenance.ViaDialog}},
		SessionGrantWidth: GrantProven,
	})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["approved"].(bool); !ok {
		t.Errorf("approved is %T", m["approved"])
	}
	if s, _ := m["state"].(string); s != "denied_with_reason" {
		t.Errorf("state = %v", m["state"])
	}
	if s, _ := m["responderSessionId"].(string); s != "parent" {
		t.Errorf("responderSessionId = %v", m["responderSessionId"])
	}
	if _, ok := m["respondedAt"].(float64); !ok {
		t.Errorf("respondedAt is %T", m["respondedAt"])
	}
	if s, _ := m["denialReason"].(string); s != "Use pnpm instead" {
		t.Errorf("denialReason = %v", m["denialReason"])
	}
	// And no denialReason member at all when there is none: pi omits it.
	data, _ = EncodeResponse(Response{Approved: true, State: StateApproved, ResponderSessionID: "p", RespondedAt: 1})
	if bytes.Contains(data, []byte("denialReason")) || bytes.Contains(data, []byte("decidedBy")) {
		t.Errorf("empty optional members written: %s", data)
	}
}

func TestResponseWithoutDecidedByNestsAsNull(t *testing.T) {
	data, _ := os.ReadFile("testdata/wire/response.pi20.approved.json")
	resp, _, err := DecodeResponse(data)
	if err != nil {
		t.Fatal(err)
	}
	nested := provenance.Nest(provenance.Str(resp.ResponderSessionID), resp.DecidedBy)
	raw, _ := json.Marshal(nested)
	if want := `{"kind":"forwarded","responderSessionId":"parent-fixture","decision":null}`; string(raw) != want {
		t.Errorf("nested = %s, want %s", raw, want)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	addFixtures(f, "request.")
	f.Fuzz(func(t *testing.T, data []byte) {
		req, _, err := DecodeRequest(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if ValidateID(req.ID) != nil {
			t.Fatalf("accepted invalid id %q", req.ID)
		}
		enc, err := EncodeRequest(req)
		if err != nil {
			t.Fatalf("decoded request does not encode: %v", err)
		}
		again, dropped, err := DecodeRequest(enc)
		if err != nil || len(dropped) != 0 {
			t.Fatalf("re-encoded request does not decode cleanly: %v %v\n%s", err, dropped, enc)
		}
		if !requestsEqual(req, again) {
			t.Fatalf("round trip changed the request:\n%+v\n%+v", req, again)
		}
	})
}

func requestsEqual(a, b Request) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func FuzzDecodeResponse(f *testing.F) {
	addFixtures(f, "response.")
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, _, err := DecodeResponse(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if resp.Approved != resp.State.Approves() {
			t.Fatalf("accepted approved=%v with state %q", resp.Approved, resp.State)
		}
		if resp.DecidedBy != nil && provenance.Depth(resp.DecidedBy) > provenance.MaxDepth {
			t.Fatalf("decidedBy deeper than the bound")
		}
		if resp.State == StateApprovedForServingSession {
			return // readable, but never written
		}
		if resp.Bound() && (resp.RequestID == "" || resp.RequestSHA256 == "") {
			return // a malformed binding: readable (and never matching), never written
		}
		enc, err := EncodeResponse(resp)
		if err != nil {
			t.Fatalf("decoded response does not encode: %v", err)
		}
		if _, _, err := DecodeResponse(enc); err != nil {
			t.Fatalf("re-encoded response does not decode: %v\n%s", err, enc)
		}
	})
}

func FuzzDecodeHeartbeat(f *testing.F) {
	addFixtures(f, "heartbeat.")
	f.Fuzz(func(t *testing.T, data []byte) {
		hb, err := DecodeHeartbeat(data)
		if err != nil {
			return
		}
		if hb.PID <= 0 || hb.SessionID == "" {
			t.Fatalf("accepted %+v", hb)
		}
	})
}

func addFixtures(f *testing.F, prefix string) {
	inputs, _ := filepath.Glob("testdata/wire/" + prefix + "*.json")
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// FuzzSplitAgreesWithUnmarshal pins the readers' splitting of a checked
// document (asObject, arrayItems, strictjson.Unquote, smallInt) to what
// encoding/json's Unmarshal, which they replaced, makes of the same bytes:
// the same members with the same raw values, the same array items, the
// same strings and numbers, at every depth.
func FuzzSplitAgreesWithUnmarshal(f *testing.F) {
	addFixtures(f, "")
	for _, doc := range []string{
		`{}`, `[]`, ` { "a" : [ 1 , "x" , { } ] , "b" : -0.5e3 } `, `{"\u0069d":"x","i\u0064x":1}`,
		`{"s":"\u00e9\n\"","t":"é","u":"` + "\xff" + `","n":123456789012345678,"m":-1234567890123456789}`,
		`[[],{},"",0,-0,1e2,true,false,null,"\\"]`, `{"a":{"b":{"c":[{"d":"e"}]}}}`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if strictjson.Check(data) != nil {
			return
		}
		compareSplit(t, bytes.TrimSpace(data), 0)
	})
}

func compareSplit(t *testing.T, raw json.RawMessage, depth int) {
	t.Helper()
	switch kindOf(raw) {
	case '{':
		o, err := asObject(raw)
		if err != nil {
			t.Fatalf("asObject(%s): %v", raw, err)
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if len(o) != len(want) {
			t.Fatalf("asObject(%s): %d members, Unmarshal %d", raw, len(o), len(want))
		}
		for name, value := range want {
			got, ok := o.get(name)
			if !ok || !bytes.Equal(got, value) {
				t.Fatalf("asObject(%s)[%q] = %s (%v), Unmarshal %s", raw, name, got, ok, value)
			}
			compareSplit(t, got, depth+1)
		}
	case '[':
		items, ok := arrayItems(raw)
		var want []json.RawMessage
		if err := json.Unmarshal(raw, &want); err != nil || !ok || len(items) != len(want) {
			t.Fatalf("arrayItems(%s) = %d items (%v), Unmarshal %d (%v)", raw, len(items), ok, len(want), err)
		}
		for i := range want {
			if !bytes.Equal(items[i], want[i]) {
				t.Fatalf("arrayItems(%s)[%d] = %s, Unmarshal %s", raw, i, items[i], want[i])
			}
			compareSplit(t, items[i], depth+1)
		}
	case '"':
		var want string
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatal(err)
		}
		if got := strictjson.Unquote(raw); string(got) != want {
			t.Fatalf("strictjson.Unquote(%s) = %q, Unmarshal %q", raw, got, want)
		}
		if got, ferr := rawString(raw, "x"); ferr != nil || got != want {
			t.Fatalf("rawString(%s) = %q, %v, Unmarshal %q", raw, got, ferr, want)
		}
	default:
		if n, ok := smallInt(raw); ok {
			want, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil || n != want {
				t.Fatalf("smallInt(%s) = %d, ParseInt %d (%v)", raw, n, want, err)
			}
		}
	}
}

// asObject and arrayItems trust that their input passed strictjson.Check,
// but bytes that did not must still end in an error, never a hang.
func TestSplitRefusesUncheckedBytes(t *testing.T) {
	for _, doc := range []string{`{`, `{"a"`, `{"a":`, `{"a":}`, `{"a":1,`, `{1:2}`, `{"a" 1}`, `{"a":,}`} {
		if _, err := asObject(json.RawMessage(doc)); !errors.Is(err, ErrMalformed) {
			t.Errorf("asObject(%s) = %v, want ErrMalformed", doc, err)
		}
	}
	for _, doc := range []string{`[`, `[1,`, `[}`, `[,}`, `[1 }`} {
		if _, ok := arrayItems(json.RawMessage(doc)); ok {
			t.Errorf("arrayItems(%s) succeeded", doc)
		}
	}
}

// PeekRequester agrees with DecodeRequest wherever the latter accepts the
// bytes, and never panics or loops on anything else.
func FuzzPeekRequester(f *testing.F) {
	addFixtures(f, "request.")
	f.Add([]byte(`{"requesterSessionId":"a","RequesterSessionId":"b"}`))
	f.Add([]byte(`{"payload":{"requesterSessionId":"x"},"requesterSessionId":"y"}`))
	f.Add([]byte(`{"requester\u0053essionId":"s\u00e9"}`))
	f.Add([]byte(`{"requesterSessionId":`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := PeekRequester(data)
		req, _, err := DecodeRequest(data)
		if err != nil {
			return
		}
		if !ok || got != req.RequesterSessionID {
			t.Fatalf("PeekRequester = %q, %v; DecodeRequest read %q", got, ok, req.RequesterSessionID)
		}
	})
}
