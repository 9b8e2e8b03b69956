package serve

import "testing"

// A file read into a reused buffer costs the buffer's whole capacity while
// it is kept (read ahead): 64 files of 64 KiB counted by their size
// passed as 4 MiB and kept 64 MiB.
func TestKeptBytesCountsAReusedBufferWhole(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want int
	}{
		{"a flood's small file", make([]byte, 600), 600},
		{"a file of 64 KiB in a reused buffer", readBuffer(largeRead)[:largeRead], readBufCap},
		{"a file of a megabyte in a reused buffer", readBuffer(readBufCap - 1)[:readBufCap-1], readBufCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := keptBytes(tt.data); got != tt.want {
				t.Errorf("keptBytes = %d, want %d", got, tt.want)
			}
			releaseRead(tt.data)
		})
	}
	// Counted so, a large file kept ahead leaves room for only a few
	// more within maxAheadLarge.
	q := newFairQueue()
	for range heavyJobs {
		q.push("f", func() {})
	}
	n := 0
	for q.readAhead("f", keptBytes(readBuffer(largeRead)[:largeRead])) {
		n++
	}
	if most := maxAheadLarge / readBufCap; n > most {
		t.Errorf("%d files of 64 KiB read ahead, want at most %d (%d MiB of buffers)", n, most, n)
	}
}
