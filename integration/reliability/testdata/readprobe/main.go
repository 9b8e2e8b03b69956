// Command readprobe times mailbox.ReadFile, the broker's read of every
// mailbox file, on each entry of a directory, and prints one line per
// entry: "<nanoseconds> <name>". After a warm-up pass each entry
// is read three times and its best time counts, so that being descheduled
// is not taken for a blocked read. The reliability tests build it without the race detector,
// so that what is timed is the broker's code as it runs in the broker.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: readprobe DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	entries, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "readprobe:", err)
		os.Exit(1)
	}
	// A warm-up pass, so that a fresh process's first heap growth is
	// not timed: the broker reads with a warm heap.
	for _, e := range entries {
		mailbox.ReadFile(filepath.Join(dir, e.Name()))
	}
	for _, e := range entries {
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			mailbox.ReadFile(filepath.Join(dir, e.Name()))
			best = min(best, time.Since(start))
		}
		fmt.Printf("%d %s\n", best.Nanoseconds(), e.Name())
	}
}
