package forward

import (
	"errors"
	"fmt"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
)

// inboxFailure logs why the parent's inbox could not be had for the ask
// requestID and returns the reason to give up with.
//
// In the isolation mode (mailbox.Isolation) only the broker's user
// creates an inbox, and it does so when it serves the session: a missing
// one means nobody serves there, so the ask is unavailable at once, as
// for a parent that is not serving, with the mailbox's sentence (which
// names the directory and the broker's uid) on the warning channel for
// whoever sets the two users up. It is never retried: no later look
// within this ask would find what only the broker makes.
func (c *Client) inboxFailure(requestID, target string, err error) string {
	if errors.Is(err, mailbox.ErrIsolation) {
		c.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(requestID), Message: "the parent's inbox is missing", Error: err})
		c.warn(err)
		return fmt.Sprintf(reasonNotServingFmt, target)
	}
	c.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(requestID), Message: "preparing the mailbox", Error: err})
	return fmt.Sprintf(reasonDirsFormat, target)
}
