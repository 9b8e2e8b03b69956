package serve

import (
	"sync"

	"github.com/seed6639df8c/courier/mailbox"
)

// A request file may be a megabyte (mailbox.MaxFileSize: a payload that
// large is legal), and an ask's file is read twice, at intake and in its
// turn (escalateJob). Read into a fresh buffer each time, 3,000 such asks
// left 6 GB to the collector, which the runtime's pacing (GOGC=100) turned
// into a peak of twice what was live. Files from largeRead bytes up are
// read into buffers reused across reads; smaller ones, a flood's some 600
// bytes among them, into buffers of their own size, which a file read
// ahead keeps until its turn (0020).
const (
	largeRead = 64 << 10
	// readBufCap is a reused buffer's capacity: the largest file
	// mailbox.ReadFile accepts and the byte past it that tells it grew.
	readBufCap = mailbox.MaxFileSize + 1
)

// readBuffers are the reused buffers. A sync.Pool lets an idle broker's
// go at the next collections.
var readBuffers = sync.Pool{New: func() any { return new([readBufCap]byte) }}

// readBuffer is mailbox.ReadFileInto's buffer for a request file of size
// bytes: a reused one for a large file, else none (a fresh one of the
// file's size).
func readBuffer(size int64) []byte {
	if size < largeRead || size >= readBufCap {
		return nil
	}
	return readBuffers.Get().(*[readBufCap]byte)[:0]
}

// releaseRead gives data's buffer back for the next large read, if it is
// one of readBuffers. data, and whatever shares its memory, must not be
// used afterwards: wire.DecodeRequest and DecodeRequestSlim copy what they
// return, and a digest is a string of its own.
func releaseRead(data []byte) {
	if cap(data) == readBufCap {
		readBuffers.Put((*[readBufCap]byte)(data[:readBufCap]))
	}
}

// keptBytes is what keeping data costs until it is released: a reused
// buffer's whole capacity, else its length. The bounds on reading ahead
// count this, not the file's size: a file of 64 KiB keeps a buffer of a
// megabyte, and 4 MiB of such files counted by size kept 64 MiB.
func keptBytes(data []byte) int {
	if cap(data) == readBufCap {
		return readBufCap
	}
	return len(data)
}
