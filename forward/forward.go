package forward

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// Timing defaults, pi's values.
const (
	// DefaultTimeout is pi's forwardingTimeoutMs default.
	DefaultTimeout = 600 * time.Second
	// DefaultGrace is how long a parent may look not-serving before the
	// child gives up (pi's PERMISSION_FORWARDING_SERVING_GRACE_MS).
	DefaultGrace = 2 * time.Second
	// DefaultLivenessInterval is how often the parent's heartbeat is read
	// while waiting. It bounds how late the grace is noticed, not latency.
	DefaultLivenessInterval = 100 * time.Millisecond
)

// Environment variables that name the parent session, in pi's order.
const (
	EnvRouterParent   = "PI_AGENT_ROUTER_PARENT_SESSION_ID"
	EnvSubagentParent = "PI_SUBAGENT_PARENT_SESSION"
)

// ResolveTarget picks the session to forward to: explicit, else
// PI_AGENT_ROUTER_PARENT_SESSION_ID, else PI_SUBAGENT_PARENT_SESSION. A
// candidate equal to the asking session's own id is skipped (an inbox
// nobody drains), and so is one that normalizes to nothing.
func ResolveTarget(explicit, self string, getenv func(string) string) (string, bool) {
	own, _ := mailbox.NormalizeSessionID(self)
	for _, candidate := range []string{explicit, getenv(EnvRouterParent), getenv(EnvSubagentParent)} {
		id, err := mailbox.NormalizeSessionID(candidate)
		if err != nil || id == own {
			continue
		}
		return id, true
	}
	return "", false
}

// Reasons for giving up, in pi's exact words
// (integration/testdata/child_abandon.txtar checks several).
const (
	ReasonNoTarget       = "Could not resolve a parent session to forward this permission request to"
	ReasonNotWritten     = "The forwarded permission request could not be written"
	ReasonUnreadable     = "The parent session's permission response could not be read"
	ReasonSessionEnded   = "The session ended before this permission request was answered"
	reasonDirsFormat     = "Permission forwarding directories could not be prepared for session '%s'"
	reasonNotServingFmt  = "Session '%s' is not serving forwarded permission requests"
	reasonNoAnswerFormat = "Session '%s' did not answer within %ss"
)

// NotServingReason is pi's reason for a target that stopped serving:
// its heartbeat absent or stale for the forwarding grace.
func NotServingReason(target string) string {
	return fmt.Sprintf(reasonNotServingFmt, target)
}

// NoAnswerReason is pi's reason for a target that did not answer within
// timeout, the seconds written as pi writes them.
func NoAnswerReason(target string, timeout time.Duration) string {
	return fmt.Sprintf(reasonNoAnswerFormat, target, seconds(timeout))
}

// ReasonNotBound is courier's own: the only answer there was bound to
// another request (a copy of someone else's answer, or an answer to request
// bytes that were replaced), or unbound where the parent binds every answer.
const ReasonNotBound = "The parent session's permission response does not answer this request"

// Client forwards asks through one mailbox root. The zero value of every
// field but Layout is a sensible default.
//
// A Client may be used by any number of goroutines at once, and should
// be: its Forwards share one inotify watch of each parent's responses/
// directory (see Close), where Clients of their own would each be woken
// by every answer. A Client must not be copied after first use.
type Client struct {
	Layout mailbox.Layout
	// Log receives the review entries; nil logs nothing.
	Log *reviewlog.Log
	// Watch selects inotify or polling for the response.
	Watch mailbox.WatchOptions
	// Timeout bounds the whole wait; 0 means DefaultTimeout.
	Timeout time.Duration
	// Deadline, when not zero, ends every ask by then if Timeout would end
	// it later, and an ask whose ctx ends by then is timed out, not
	// abandoned: a caller whose time started before the ask (child hook
	// gives its whole event and each ask the same --timeout) keeps its
	// deadline, and the reason still names Timeout.
	Deadline time.Time
	// NoHeartbeat waits for the answer up to Timeout without checking the
	// parent's heartbeat: a pi 20.x parent writes none.
	NoHeartbeat bool
	// Grace is how long the parent may look not-serving; 0 means
	// DefaultGrace.
	Grace time.Duration
	// LivenessInterval is how often the heartbeat is read; 0 means
	// DefaultLivenessInterval.
	LivenessInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnWarning receives problems worth a line on stderr (a failed log
	// write, a dropped response field); nil discards them.
	OnWarning func(error)
	// PollFirst, when positive, makes Forward look for the answer at
	// short intervals for up to this long after writing the request, and
	// arm the watch of responses/ only when none came by then. It is for
	// a process that makes one ask and exits (OneShotPollFirst): a
	// process that had an inotify watch waits, as it exits, for the
	// kernel to tear the watch down (an SRCU grace period: 5 to 13 ms
	// measured here, more than the whole ask), and a rule's answer comes
	// within a few milliseconds. 0 arms the watch before the request is
	// written, as the Clients of a long-lived host should: they share one
	// watch and never pay its teardown per ask.
	PollFirst time.Duration
	// OnLongWait, when set, is called once per Forward, on the asking
	// goroutine, as soon as the answer is not a quick one: with PollFirst,
	// when the first look's fast phase (the first few milliseconds after
	// the request was written, when a rule's or a grant's answer comes)
	// has passed without it; without PollFirst, once the request is
	// written. A one-ask process arms its handling of Ctrl-C there
	// (cmd/child): arming it costs about as much as a rule's whole round
	// trip (docs/decisions/0030-interrupts-armed-for-long-waits.md).
	OnLongWait func()

	mu           sync.Mutex
	watcher      *responseWatcher // started by the first Forward
	retryWatcher time.Time        // no new watcher before, after a failure
	closed       bool
	// retired are watchers that released themselves (idle) and were
	// replaced while their goroutine may still be on its way out: Close
	// waits for them too, so none outlives the Client.
	retired []*responseWatcher
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (c *Client) warn(err error) {
	if err != nil && c.OnWarning != nil {
		c.OnWarning(err)
	}
}

func (c *Client) log(e reviewlog.Entry) {
	if err := c.Log.Emit(e); err != nil {
		c.warn(err)
	}
}

// Unresolved is the decision when no parent session could be resolved.
// The caller logs nothing else: there is no request to speak of.
func (c *Client) Unresolved(requestID string) decision.Decision {
	c.log(UnresolvedEntry(requestID))
	d := decision.NobodyAnswered(ReasonNoTarget)
	c.logFinal(requestID, d)
	return d
}

// UnresolvedEntry is the review entry saying why no parent session was
// resolved for the ask requestID, whatever transport would have carried it.
func UnresolvedEntry(requestID string) reviewlog.Entry {
	return reviewlog.ForwardingErrorEntry{
		RequestID: reviewlog.Str(requestID),
		Message: ReasonNoTarget + ": checked --parent, " + EnvRouterParent + " and " + EnvSubagentParent +
			"; subagent integrations should set " + EnvSubagentParent,
	}
}

// Forward writes req into its target's inbox and waits for the answer. It
// always returns a decision (see the package doc); ctx ending early gives
// up like a timeout, with ReasonSessionEnded. A bash intent without asking
// units is given them first (FillBashUnits).
func (c *Client) Forward(ctx context.Context, req wire.Request) decision.Decision {
	if ai := req.AccessIntent; ai != nil && ai.Surface == "bash" && len(ai.AskingUnits) == 0 {
		// A whole command line from a caller that did not split it: the
		// parent judges it unit by unit (FillBashUnits). A copy, so the
		// caller's request stays as given.
		filled := *ai
		FillBashUnits(&filled)
		req.AccessIntent = &filled
	}
	x := exchange{c: c, req: req}
	if d, ok := x.open(ctx); !ok {
		return d
	}
	defer x.close()
	if reason := x.write(); reason != "" {
		return x.abandon(reason)
	}
	return x.await(ctx)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// seconds formats a duration the way pi's `${timeoutMs / 1000}` does.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Milliseconds())/1000, 'f', -1, 64)
}

// abandon gives up on req: it deletes the request (when it was written) so
// that a late answer cannot arrive, and decides "unavailable". When the
// parent is not serving, the session's empty directories are removed in
// pi's order (requests, then responses, then the session), so a dead
// parent's tree does not linger.
func (c *Client) abandon(req wire.Request, reqPath, reason string) decision.Decision {
	if reqPath != "" {
		c.discard(reqPath)
		if reason == fmt.Sprintf(reasonNotServingFmt, req.TargetSessionID) {
			c.cleanup(req.TargetSessionID)
		}
	}
	d := decision.NobodyAnswered(reason)
	c.logFinal(req.ID, d)
	return d
}

// logFinal writes the child's terminal entry for the ask, which carries
// the decider as every terminal entry must.
func (c *Client) logFinal(requestID string, d decision.Decision) {
	if c.Log == nil {
		return // spares building the entry
	}
	c.log(TerminalEntry(requestID, d))
}

// TerminalEntry is the child's terminal review entry for the forwarded
// ask requestID that ended with d, whatever transport carried it.
func TerminalEntry(requestID string, d decision.Decision) reviewlog.Entry {
	outcome := provenance.OutcomeDenied
	switch {
	case d.State == decision.StateApprovedForSession:
		outcome = provenance.OutcomeApprovedForSession
	case d.Approved():
		outcome = provenance.OutcomeApproved
	}
	e := reviewlog.RequestApprovedEntry{
		RequestID: requestID, State: string(d.State), Resolution: string(provenance.ResolutionFor(d.DecidedBy, outcome)),
		DenialReason: d.DenialReason, DecidedBy: d.DecidedBy,
	}
	if d.State == decision.StateApprovedForSession {
		width := d.SessionGrantWidth
		if width == "" {
			width = wire.GrantProven
		}
		e.SessionGrantWidth = string(width)
	}
	if d.Approved() {
		return e
	}
	return reviewlog.RequestDeniedEntry(e)
}

func (c *Client) discard(path string) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.warn(fmt.Errorf("removing %s: %w", path, err))
	}
}

func (c *Client) cleanup(target string) {
	if err := c.Layout.CleanupSession(target); err != nil {
		c.warn(err)
	}
}

// LogLocal writes the terminal entry of an ask a local session grant
// answered without forwarding.
func (c *Client) LogLocal(req wire.Request, d decision.Decision) {
	c.log(LocalEntry(req, d))
}

// LocalEntry is the terminal review entry of an ask a local session grant
// answered without forwarding.
func LocalEntry(req wire.Request, d decision.Decision) reviewlog.Entry {
	return reviewlog.RequestSessionApprovedEntry{
		RequestID: req.ID, RequesterAgentName: req.RequesterAgentName, RequesterSessionID: req.RequesterSessionID,
		State: string(d.State), Resolution: string(provenance.ResolutionSessionApproved), DecidedBy: d.DecidedBy,
	}
}
