package wire

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

// FuzzDecodeRequestSlim pins DecodeRequestSlim to DecodeRequest: on any
// bytes, the same error (or none), the same dropped fields and the same
// request but for the message and the payload, which it never keeps. A
// broker that decides on the slim request must have decided on what the
// full reader reads (docs/decisions/0001: one reader's rules).
func FuzzDecodeRequestSlim(f *testing.F) {
	addFixtures(f, "request.")
	for _, doc := range []string{
		`{"id":"a","createdAt":1,"requesterSessionId":"s","targetSessionId":"t","requesterAgentName":"n","message":7,"payload":"x"}`,
		`{"id":"a","createdAt":1,"requesterSessionId":"s","targetSessionId":"t","requesterAgentName":"n","message":"h\u00e9\n","payload":{"k":[1,{"z":null}]}}`,
		`{"id":"a","createdAt":1,"requesterSessionId":"s","targetSessionId":"t","requesterAgentName":"n","message":null,"payload":null}`,
		`{"id":"a","createdAt":1,"requesterSessionId":"s","targetSessionId":"t","requesterAgentName":"n","message":"x","message":"y"}`,
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		full, fullDropped, fullErr := DecodeRequest(data)
		slim, slimDropped, slimErr := DecodeRequestSlim(data)
		if fmt.Sprint(fullErr) != fmt.Sprint(slimErr) || errors.Is(slimErr, ErrMalformed) != errors.Is(fullErr, ErrMalformed) {
			t.Fatalf("errors differ: full %v, slim %v", fullErr, slimErr)
		}
		if !reflect.DeepEqual(fullDropped, slimDropped) {
			t.Fatalf("dropped fields differ: full %v, slim %v", fullDropped, slimDropped)
		}
		if slim.Message != "" || slim.Payload != nil {
			t.Fatalf("slim kept message %q and payload %q", slim.Message, slim.Payload)
		}
		full.Message, full.Payload = "", nil
		if !reflect.DeepEqual(full, slim) {
			t.Fatalf("requests differ:\nfull %+v\nslim %+v", full, slim)
		}
	})
}

// The slim request shares no memory with the bytes read: a caller reuses
// its read buffer for the next file once it is decoded.
func TestDecodeRequestSlimKeepsNothingOfData(t *testing.T) {
	data := []byte(`{"id":"req-1","createdAt":1,"requesterSessionId":"sess","targetSessionId":"parent","requesterAgentName":"agent","message":"text","payload":{"p":1},"surface":"bash","value":"make deploy","accessIntent":{"surface":"bash","matchValues":["make deploy"],"boundaryValue":null,"requesterCwd":"/w","principal":{"sessionId":"sess","agentName":"agent"}}}`)
	req, dropped, err := DecodeRequestSlim(data)
	if err != nil || len(dropped) != 0 {
		t.Fatalf("DecodeRequestSlim: %v %v", err, dropped)
	}
	want := fmt.Sprintf("%+v %+v", req, *req.AccessIntent)
	for i := range data {
		data[i] = 'x'
	}
	if got := fmt.Sprintf("%+v %+v", req, *req.AccessIntent); got != want {
		t.Fatalf("the request changed with the bytes it was read from:\n%s\n%s", want, got)
	}
}
