package forward

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/reviewlog"
)

// OneShotPollFirst is Client.PollFirst for a process that makes one ask
// and exits (child ask, child hook): long enough for an answer by a rule
// or a plugin, on tmpfs or on a loaded disk, to come without the watch;
// short beside an answer a human gives, for whom the exit's few
// milliseconds of inotify teardown do not matter
// (docs/decisions/0021-child-start-up.md).
const OneShotPollFirst = 50 * time.Millisecond

// The first look's naps: firstNap apart for the first fastFor, where a
// rule's answer comes (0.3 to 3 ms), then doubling up to maxNap. A look is
// one lstat; the whole first look costs a few dozen of them.
const (
	firstNap = 50 * time.Microsecond
	maxNap   = time.Millisecond
)

// fastFor is the first look's fast phase; past it the answer is not a
// quick one (Client.OnLongWait). A variable for the tests alone.
var fastFor = 3 * time.Millisecond

// pollFirst looks for the answer at short intervals for up to window,
// before any watch is armed (Client.PollFirst). It returns the decision
// and true when the answer came; false when the window passed, ctx ended,
// or a file there was refused (answer set up its recheck): the caller
// then arms the watch and waits as usual.
func (x *exchange) pollFirst(ctx context.Context, window time.Duration) (decision.Decision, bool) {
	start := time.Now()
	nap := firstNap
	for {
		if exists(x.respPath) {
			if d, ok := x.answer(); ok || x.refused {
				return d, ok
			}
		}
		elapsed := time.Since(start)
		if elapsed >= window || ctx.Err() != nil {
			return decision.Decision{}, false
		}
		if elapsed >= fastFor {
			x.longWait()
			nap = min(2*nap, maxNap)
		}
		sleepPrecisely(min(nap, window-elapsed))
	}
}

// sleepPrecisely blocks the calling thread for about d. Not time.Sleep:
// when every goroutine waits, the Go runtime waits for its next timer in
// epoll_wait, whose timeout is in whole milliseconds, so a 50 µs
// time.Sleep takes 1.1 ms here; nanosleep takes 0.15 ms. It blocks one
// thread for at most maxNap, and only in a Client with PollFirst set.
func sleepPrecisely(d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	_ = unix.Nanosleep(&ts, nil) // EINTR only shortens one nap
}

// armLate arms the wait after a first look found no answer, and looks
// once more: an answer that came between the last look and the arming
// signals nothing. It returns the decision and false when the exchange is
// over (the answer came, or the wait could not be armed: the request is
// then withdrawn).
func (x *exchange) armLate(ctx context.Context) (decision.Decision, bool) {
	if d, ok := x.arm(ctx, true); !ok {
		return d, false
	}
	if !x.refused && exists(x.respPath) {
		if d, ok := x.answer(); ok {
			return d, false
		}
	}
	return decision.Decision{}, true
}

// arm arms the wait for the answer, before the request is written (open)
// or after a first look (armLate, written). When it cannot, it abandons
// the ask (withdrawing the request if written) and returns the decision
// and false.
func (x *exchange) arm(ctx context.Context, written bool) (decision.Decision, bool) {
	c, req := x.c, &x.req
	wait, err := c.armWait(ctx, req.TargetSessionID, x.respPath)
	if err == nil {
		x.wait = wait
		return decision.Decision{}, true
	}
	reason := ReasonNotWritten
	if ie := (*inboxError)(nil); errors.As(err, &ie) {
		reason = c.inboxFailure(req.ID, req.TargetSessionID, ie.err)
	} else {
		c.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), Message: "watching for the response", Error: err})
	}
	if written {
		return x.abandon(reason), false
	}
	return c.abandon(*req, "", reason), false
}
