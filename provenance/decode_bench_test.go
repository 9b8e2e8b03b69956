package provenance

import (
	"encoding/json"
	"strconv"
	"testing"
)

// BenchmarkDecode reads a `decidedBy` value as a child reads one off disk:
// a rule decider bare (depth 0) and inside MaxDepth forwarded frames
// (depth 4, the deepest accepted), and one frame too deep, which must be
// refused as cheaply.
//
//	go test -run '^$' -bench BenchmarkDecode -benchmem ./provenance/
func BenchmarkDecode(b *testing.B) {
	for _, depth := range []int{0, MaxDepth, MaxDepth + 1} {
		raw, err := json.Marshal(nested(depth))
		if err != nil {
			b.Fatal(err)
		}
		b.Run("depth-"+strconv.Itoa(depth), func(b *testing.B) {
			if _, ok := Decode(raw); ok != (depth <= MaxDepth) {
				b.Fatalf("Decode at depth %d: ok = %v", depth, ok)
			}
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				Decode(raw)
			}
		})
	}
}
