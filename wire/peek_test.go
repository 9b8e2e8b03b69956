package wire

import (
	"os"
	"testing"
)

func TestPeekRequester(t *testing.T) {
	pi25, err := os.ReadFile("testdata/wire/request.pi25.floor.json")
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := DecodeRequest(pi25)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, data string
		want       string
		ok         bool
	}{
		{"a pi 25 request", string(pi25), req.RequesterSessionID, true},
		{"escaped key and value", `{"requester\u0053essionId":"s\u00e9"}`, "sé", true},
		{"the top level only", `{"payload":{"requesterSessionId":"x"},"requesterSessionId":"y"}`, "y", true},
		{"the first of two", `{"requesterSessionId":"a","requesterSessionId":"b"}`, "a", true},
		{"not a string", `{"requesterSessionId":7}`, "", false},
		{"missing", `{"id":"x"}`, "", false},
		{"cut short", `{"id":"x","requesterSessionId":`, "", false},
		{"not an object", `["requesterSessionId","x"]`, "", false},
		{"empty", ``, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := PeekRequester([]byte(tc.data))
			if got != tc.want || ok != tc.ok {
				t.Errorf("PeekRequester = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
