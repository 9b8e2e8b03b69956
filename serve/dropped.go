package serve

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// The grants admission drops are logged as one entry per admission: how
// many, and the first few with why. One entry per grant let a child that
// suggests 100 long grants an ask write some 70 KB of warnings for each,
// which rotated every decision out of the review log in seconds (review
// finding 8). The summary is bounded whatever the child sends: at most
// droppedListed grants, each pattern and reason cut short, and the log
// cuts each field at its width besides.
const (
	// droppedListed is how many dropped grants the entry names.
	droppedListed = 5
	// droppedPatternRunes and droppedWhyRunes cut a named grant's pattern
	// and reason, so that five fit in one field of the log's width.
	droppedPatternRunes = 60
	droppedWhyRunes     = 100
)

// logDropped writes one review entry for the grants an admission dropped:
// count of them (what was offered less what was admitted; the grants past
// admission's limit are one item of dropped), and the first few with why.
func (b *Broker) logDropped(req *wire.Request, what string, count int, dropped []rules.DroppedGrant) {
	if len(dropped) == 0 {
		return
	}
	count = max(count, len(dropped))
	message := fmt.Sprintf("%d session grants were dropped, %s", count, what)
	if count == 1 {
		message = "1 session grant was dropped, " + what
	}
	var list strings.Builder
	for i, g := range dropped[:min(len(dropped), droppedListed)] {
		if i > 0 {
			list.WriteString("; ")
		}
		fmt.Fprintf(&list, "%s %s (%s)", g.Grant.Surface, strconv.Quote(cutRunes(g.Grant.Pattern, droppedPatternRunes)), cutRunes(g.Why, droppedWhyRunes))
	}
	if named := min(len(dropped), droppedListed); count > named {
		fmt.Fprintf(&list, "; and %d more", count-named)
	}
	p := parties(req)
	b.log(reviewlog.ForwardingWarningEntry{
		Message: message, Error: errors.New(list.String()),
		RequestID: reviewlog.Str(req.ID), Parties: &p,
	})
}

// cutRunes cuts s to n runes, the last of them "…" when it was longer.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for range n - 1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i] + "…"
}
