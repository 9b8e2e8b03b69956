package natsbridge

import (
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

func validMarker() marker {
	return marker{RequestID: "perm-1", Owner: "alice", Subject: "courier.req.s.alice.perm-1", RequestSHA256: wire.RequestDigest([]byte("x")), BridgedAt: 1}
}

func TestMarkerRoundTripAndRefusals(t *testing.T) {
	m := validMarker()
	data, err := encodeMarker(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMarker(data)
	if err != nil || got != m {
		t.Fatalf("decode(encode(m)) = %+v, %v", got, err)
	}
	for name, doc := range map[string]string{
		"not json":      `{`,
		"unknown key":   strings.Replace(string(data), `"owner"`, `"extra":1,"owner"`, 1),
		"duplicate key": strings.Replace(string(data), `"owner":"alice"`, `"owner":"alice","owner":"bob"`, 1),
		"bad id":        strings.Replace(string(data), `"perm-1"`, `"../x"`, 1),
		"bad owner":     strings.Replace(string(data), `"alice"`, `"a.b"`, 1),
		"bad digest":    strings.Replace(string(data), m.RequestSHA256, "ABC", 1),
	} {
		if _, err := decodeMarker([]byte(doc)); err == nil {
			t.Errorf("%s: %s decoded", name, doc)
		}
	}
}

// A marker directory holding what is not a marker (a file another id's
// marker was renamed to, garbage) loads the markers alone and removes the
// rest.
func TestMarkersLoadSkipsAndRemovesWhatIsNotAMarker(t *testing.T) {
	layout := mailbox.Layout{Root: t.TempDir()}
	s, err := newMarkers(layout, "s")
	if err != nil {
		t.Fatal(err)
	}
	m := validMarker()
	if err := s.write(m); err != nil {
		t.Fatal(err)
	}
	data, _ := encodeMarker(m)
	if err := layout.WriteFile(s.path("perm-2"), data, mailbox.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := layout.WriteFile(s.path("perm-3"), []byte("garbage"), mailbox.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var reported []error
	got := s.load(func(err error) { reported = append(reported, err) })
	if len(got) != 1 || got[0] != m || len(reported) != 2 {
		t.Fatalf("loaded %+v, reported %v", got, reported)
	}
	if exists(s.path("perm-2")) || exists(s.path("perm-3")) || !exists(s.path("perm-1")) {
		t.Error("the files that are not markers were not removed, or the marker was")
	}
}

func FuzzDecodeMarker(f *testing.F) {
	data, _ := encodeMarker(validMarker())
	f.Add(data)
	f.Add([]byte(`{"requestId":"a","owner":"b","subject":"c","requestSha256":"","bridgedAt":1e400}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeMarker(data)
		if err != nil {
			return
		}
		if err := m.check(); err != nil {
			t.Fatalf("decoded a marker that fails its check: %v", err)
		}
		again, err := encodeMarker(m)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := decodeMarker(again); err != nil || back != m {
			t.Fatalf("round trip: %+v, %v", back, err)
		}
	})
}
