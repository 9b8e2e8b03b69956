// Package reviewlogtest opens review logs for tests of the packages that
// write one.
package reviewlogtest

import (
	"path/filepath"
	"testing"

	"github.com/seed6639df8c/courier/reviewlog"
)

// Open opens a review log in a directory of the test's and returns it and
// its path. It is closed when the test ends, after whatever the test
// started with it later and stops in its own cleanup (a broker), since
// cleanups run last registered first.
func Open(t testing.TB) (*reviewlog.Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "review.jsonl")
	log, err := reviewlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return log, path
}
