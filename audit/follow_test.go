package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/internal/filewatch"
	"github.com/seed6639df8c/courier/reviewlog"
)

// following runs Follow on path in the background; its decisions arrive
// on the returned channel, and stop ends it and returns its error.
func following(t *testing.T, path string, opts filewatch.Options) (<-chan Listed, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan Listed, 1024)
	done := make(chan error, 1)
	ls := &Lister{Emit: func(l Listed) error { got <- l; return nil }}
	go func() { done <- Follow(ctx, path, ls, opts) }()
	return got, func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Follow did not return within 10s of its context's end")
			return nil
		}
	}
}

// next waits for the next decision, with a deadline.
func next(t *testing.T, got <-chan Listed, what string) Listed {
	t.Helper()
	select {
	case l := <-got:
		return l
	case <-time.After(10 * time.Second):
		t.Fatalf("%s was not listed within 10s", what)
		return Listed{}
	}
}

func decided(id, value string) reviewlog.Entry {
	return reviewlog.ForwardedApprovedEntry{RequestID: id, Parties: parties("Explore"), Resolution: "approved", DecidedBy: user, Asked: bashAsked(value, value)}
}

// TestFollowListsWhatIsLoggedAfter: --follow lists what the log holds,
// then each decision logged after it started, through the log's
// rotations, and stops when its context ends.
func TestFollowListsWhatIsLoggedAfter(t *testing.T) {
	for _, c := range []struct {
		name string
		opts filewatch.Options
	}{
		{"watched", filewatch.Options{}},
		{"polled", filewatch.Options{Poll: true, Timing: filewatch.Timing{Poll: 20 * time.Millisecond}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "review.jsonl")
			// A cap that rotates every few lines.
			l, err := reviewlog.Open(path, reviewlog.WithMaxBytes(1500))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.Emit(decided("perm-before", "make before")); err != nil {
				t.Fatal(err)
			}
			got, stop := following(t, path, c.opts)
			if d := next(t, got, "the decision logged before"); d.RequestID != "perm-before" {
				t.Fatalf("listed %+v first", d)
			}
			for i := range 12 {
				id := fmt.Sprintf("perm-%d", i)
				if err := l.Emit(decided(id, "make deploy "+id)); err != nil {
					t.Fatal(err)
				}
				if d := next(t, got, id); d.RequestID != id || d.Value != "make deploy "+id {
					t.Fatalf("listed %+v, want %s", d, id)
				}
			}
			if _, err := os.Stat(path + reviewlog.RotatedSuffix); err != nil {
				t.Fatalf("the log never rotated: %v", err)
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFollowWaitsForTheLog: a log that does not exist yet is listed once
// it does; a log truncated in place is read again from its start.
func TestFollowWaitsForTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "courier", "review.jsonl")
	got, stop := following(t, path, filewatch.Options{})
	l, err := reviewlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Emit(decided("perm-1", "make deploy")); err != nil {
		t.Fatal(err)
	}
	if d := next(t, got, "the first decision"); d.RequestID != "perm-1" {
		t.Fatalf("listed %+v", d)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Emit(decided("perm-2", "make test")); err != nil {
		t.Fatal(err)
	}
	if d := next(t, got, "the decision after the truncation"); d.RequestID != "perm-2" {
		t.Fatalf("listed %+v", d)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestFollowListsAHeldAskInTime: a child's line that does not say what
// was asked is held for the broker's, but listed as it is soon after if
// none comes (its parent logs elsewhere).
func TestFollowListsAHeldAskInTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	l, err := reviewlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, stop := following(t, path, filewatch.Options{Poll: true, Timing: filewatch.Timing{Poll: 20 * time.Millisecond}})
	if err := l.Emit(reviewlog.ForwardedResponseTimedOutEntry{RequestID: "perm-1", DecidedBy: nobody}); err != nil {
		t.Fatal(err)
	}
	if d := next(t, got, "the child's decision"); d.RequestID != "perm-1" || d.Decider != "unavailable" || d.Outcome != OutcomeDenied {
		t.Fatalf("listed %+v", d)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
