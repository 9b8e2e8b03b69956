package wire

import (
	"errors"
	"testing"
)

func TestCheckBinding(t *testing.T) {
	req := []byte(`{"id":"perm-1"}`)
	digest := RequestDigest(req)
	approve := Response{Approved: true, State: StateApproved, ResponderSessionID: "parent", RespondedAt: 1}
	roundTrip := func(r Response) Response {
		t.Helper()
		data, err := EncodeResponse(r)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := DecodeResponse(data)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	for _, tc := range []struct {
		name     string
		resp     Response
		required bool
		want     error
	}{
		{"bound to this request", roundTrip(approve.Bind("perm-1", digest)), true, nil},
		{"bound, not required", roundTrip(approve.Bind("perm-1", digest)), false, nil},
		{"unbound from pi", roundTrip(approve), false, nil},
		{"unbound where required", roundTrip(approve), true, ErrUnboundResponse},
		{"another request's answer", roundTrip(approve.Bind("perm-2", digest)), false, ErrForeignResponse},
		{"other request bytes", roundTrip(approve.Bind("perm-1", RequestDigest([]byte(`{"id":"perm-1","x":1}`)))), false, ErrForeignResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := CheckBinding(tc.resp, "perm-1", digest, tc.required); !errors.Is(err, tc.want) {
				t.Fatalf("CheckBinding = %v, want %v", err, tc.want)
			}
		})
	}

	// A binding that is present but malformed never matches, even where an
	// unbound answer would be accepted.
	for _, data := range []string{
		`{"approved":true,"state":"approved","responderSessionId":"p","requestId":"perm-1"}`,
		`{"approved":true,"state":"approved","responderSessionId":"p","requestId":"perm-1","requestSha256":"` + digest[:63] + `"}`,
		`{"approved":true,"state":"approved","responderSessionId":"p","requestId":7,"requestSha256":"` + digest + `"}`,
		`{"approved":true,"state":"approved","responderSessionId":"p","requestId":null,"requestSha256":null}`,
	} {
		resp, dropped, err := DecodeResponse([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if !resp.Bound() || CheckBinding(resp, "perm-1", digest, false) == nil {
			t.Errorf("%s: a malformed binding was accepted (dropped %v)", data, dropped)
		}
	}
}

func TestEncodeResponseRefusesHalfABinding(t *testing.T) {
	r := Response{Approved: true, State: StateApproved, ResponderSessionID: "p", RequestID: "perm-1"}
	if _, err := EncodeResponse(r); err == nil {
		t.Fatal("encoded a binding without its digest")
	}
}

func TestHeartbeatAnnouncesTheBinding(t *testing.T) {
	data, err := EncodeHeartbeat(Heartbeat{SessionID: "s", PID: 1, UpdatedAt: 2, ResponseBinding: BindingSHA256})
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"sessionId":"s","pid":1,"updatedAt":2,"responseBinding":"sha256"}` {
		t.Fatalf("encoded %s", data)
	}
	h, err := DecodeHeartbeat(data)
	if err != nil || h.ResponseBinding != BindingSHA256 {
		t.Fatalf("decoded %+v, %v", h, err)
	}
}

// FuzzResponseBinding: whatever the bytes, a response is accepted as the
// answer to request perm-1 only when it names perm-1 and the digest, and
// an unbound one only when the binding is not required.
func FuzzResponseBinding(f *testing.F) {
	addFixtures(f, "response.")
	digest := RequestDigest([]byte("request"))
	bound, _ := EncodeResponse(Response{Approved: true, State: StateApproved, ResponderSessionID: "p", RequestID: "perm-1", RequestSHA256: digest})
	f.Add(bound)
	f.Fuzz(func(t *testing.T, data []byte) {
		resp, _, err := DecodeResponse(data)
		if err != nil {
			return
		}
		for _, required := range []bool{false, true} {
			if CheckBinding(resp, "perm-1", digest, required) != nil {
				continue
			}
			switch {
			case resp.Bound() && (resp.RequestID != "perm-1" || resp.RequestSHA256 != digest):
				t.Fatalf("accepted a response bound to %q/%q", resp.RequestID, resp.RequestSHA256)
			case !resp.Bound() && required:
				t.Fatal("accepted an unbound response where the binding is required")
			}
		}
	})
}
