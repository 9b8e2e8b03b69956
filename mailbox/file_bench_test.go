package mailbox

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The broker writes one response and reads one request per ask; these
// benchmarks pin the cost of each on the two filesystems a mailbox lives
// on: a disk (the default root under ~/.pi) and a tmpfs ($XDG_RUNTIME_DIR,
// /dev/shm). Most of it is system calls, so compare runs on one machine.
//
//	go test -run '^$' -bench 'Benchmark(WriteResponse|ReadFile)' -benchmem ./mailbox/

func BenchmarkWriteResponse(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "wire", "testdata", "wire", "response.courier.bound.json"))
	if err != nil {
		b.Fatal(err)
	}
	forEachFilesystem(b, func(b *testing.B, root string) {
		l := Layout{Root: root}
		if err := l.EnsureInbox("s"); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			// A new name each time, as every ask has its own id; the
			// files are left for the cleanup, as the child would
			// remove them outside the broker's time.
			i++
			if err := l.WriteResponse("s", "perm-"+strconv.Itoa(i), data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkReadFile(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "wire", "testdata", "wire", "request.pi25.full.json"))
	if err != nil {
		b.Fatal(err)
	}
	forEachFilesystem(b, func(b *testing.B, root string) {
		path := filepath.Join(root, "perm-1.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ReadFile(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// forEachFilesystem runs bench in a fresh directory on the test's
// temporary directory and, where there is one, on /dev/shm.
func forEachFilesystem(b *testing.B, bench func(b *testing.B, root string)) {
	b.Run("tempdir", func(b *testing.B) { bench(b, b.TempDir()) })
	b.Run("shm", func(b *testing.B) {
		root, err := os.MkdirTemp("/dev/shm", "courier-mailbox-bench-")
		if err != nil {
			b.Skipf("no /dev/shm here: %v", err)
		}
		b.Cleanup(func() { os.RemoveAll(root) })
		bench(b, root)
	})
}
