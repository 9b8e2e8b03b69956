package chain

import (
	"errors"
	"fmt"

	"github.com/seed6639df8c/courier/authorizer"
)

// Sentinel errors a Link wraps so the chain can say in a few words, to
// the child and in the review log, why a link could not judge an ask.
// A link that answered something that is not a verdict wraps
// [authorizer.ErrInvalidVerdict]. Any other error is reported as "failed".
var (
	// ErrDisabled: the link was not loaded (missing binary, checksum
	// mismatch); every ask gets its failure verdict.
	ErrDisabled = errors.New("link disabled")
	// ErrTimeout: the link did not answer within its deadline.
	ErrTimeout = errors.New("link timed out")
	// ErrUnavailable: the link's process crashed, could not start, or is
	// waiting out a restart backoff.
	ErrUnavailable = errors.New("link unavailable")
	// ErrClosed: the link was used after Close.
	ErrClosed = errors.New("link closed")
)

// failureCause names err's class for messages.
func failureCause(err error) string {
	switch {
	case errors.Is(err, ErrDisabled):
		return "is disabled"
	case errors.Is(err, ErrTimeout):
		return "timed out"
	case errors.Is(err, ErrUnavailable):
		return "is unavailable"
	case errors.Is(err, authorizer.ErrInvalidVerdict):
		return "gave an invalid answer"
	case errors.Is(err, ErrClosed):
		return "is shut down"
	}
	return "failed"
}

// failureVerdict is the verdict of a link that could not judge: Defer
// when its policy says so, otherwise Deny with a reason that names the
// link and what went wrong, never the link's own words.
func failureVerdict(m Member, err error) authorizer.Verdict {
	if m.OnFailure == authorizer.Defer {
		return authorizer.Verdict{Kind: authorizer.Defer}
	}
	return authorizer.Verdict{Kind: authorizer.Deny, Reason: fmt.Sprintf("authorizer %q %s and its failure policy denies the request", m.Link.Name(), failureCause(err))}
}
