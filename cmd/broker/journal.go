package main

import (
	"fmt"
	"io"

	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
)

// loadJournal restores the session's whole-session grants into into and
// says what it loaded: each grant, and where it is from (the journal, the
// request, what was asked, when, who answered), so that a grant nobody
// remembers giving is seen at once.
//
// A journal that cannot be taken in (one the broker did not write, above
// all) does not stop the broker: it serves with none of its grants, which
// only means more asks reach the terminal, and says so loudly, on stderr
// and in the review log. The file is left as it is, and no grant is
// journaled over it, until the operator removes it
// (docs/decisions/0015-grant-journal-ownership.md).
func loadJournal(j *grants.Journal, into *rules.SessionRules, log *reviewlog.Log, stderr io.Writer) {
	if err := j.Load(into); err != nil {
		fmt.Fprintf(stderr, "broker: error: %v\n", err)
		fmt.Fprintf(stderr, "broker: serving with no whole-session grants: %s is left as it is, and no grant is journaled until it is removed\n", j.Path())
		if werr := log.Emit(reviewlog.ForwardingErrorEntry{
			Message: "Refused the grant journal: serving without its grants, journaling none until it is removed",
			Journal: j.Path(), Error: err,
		}); werr != nil {
			fmt.Fprintf(stderr, "broker: %v\n", werr)
		}
		return
	}
	entries := j.Entries(into)
	if len(entries) == 0 {
		return
	}
	kind := "grants"
	if len(entries) == 1 {
		kind = "grant"
	}
	fmt.Fprintf(stderr, "broker: %d whole-session %s loaded from %s:\n", len(entries), kind, j.Path())
	for _, e := range entries {
		fmt.Fprintf(stderr, "broker:   %s\n", e)
	}
}
