package wire

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The readers run on every file a broker or a child reads, on untrusted
// input; these benchmarks pin their cost per golden fixture so that a
// regression shows in ns/op and allocs/op.
//
//	go test -run '^$' -bench 'BenchmarkDecode(Request|Response)' -benchmem ./mailbox/

func BenchmarkDecodeRequest(b *testing.B) {
	benchDecodeFixtures(b, "request.", func(data []byte) error {
		_, _, err := DecodeRequest(data)
		return err
	})
}

func BenchmarkDecodeResponse(b *testing.B) {
	benchDecodeFixtures(b, "response.", func(data []byte) error {
		_, _, err := DecodeResponse(data)
		return err
	})
}

// benchDecodeFixtures runs decode on every testdata/wire fixture whose name
// starts with prefix, one sub-benchmark each. Rejected ("bad") fixtures
// are measured too: a hostile file must be cheap to refuse.
func benchDecodeFixtures(b *testing.B, prefix string, decode func([]byte) error) {
	paths, err := filepath.Glob(filepath.Join("testdata", "wire", prefix+"*.json"))
	if err != nil || len(paths) == 0 {
		b.Fatalf("no %s fixtures: %v", prefix, err)
	}
	for _, path := range paths {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), prefix), ".json")
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		wantErr := strings.Contains(name, "bad.")
		b.Run(name, func(b *testing.B) {
			if err := decode(data); (err != nil) != wantErr {
				b.Fatalf("decode error = %v, want an error: %v", err, wantErr)
			}
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				_ = decode(data)
			}
		})
	}
}
