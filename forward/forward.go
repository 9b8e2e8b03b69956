package forward

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

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
// nobody drains, pi #907), and so is one that normalizes to nothing.
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

// Reasons for giving up, pi's exact sentences (reference §3.3).
const (
	ReasonNoTarget       = "Could not resolve a parent session to forward this permission request to"
	ReasonNotWritten     = "The forwarded permission request could not be written"
	ReasonUnreadable     = "The parent session's permission response could not be read"
	ReasonSessionEnded   = "The session ended before this permission request was answered"
	reasonDirsFormat     = "Permission forwarding directories could not be prepared for session '%s'"
	reasonNotServingFmt  = "Session '%s' is not serving forwarded permission requests"
	reasonNoAnswerFormat = "Session '%s' did not answer within %ss"
)

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

	mu           sync.Mutex
	watcher      *responseWatcher // started by the first Forward
	retryWatcher time.Time        // no new watcher before, after a failure
	closed       bool
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

func (c *Client) log(event string, details map[string]any) {
	if err := c.Log.Write(event, details); err != nil {
		c.warn(err)
	}
}

// Unresolved is the decision when no parent session could be resolved.
// The caller logs nothing else: there is no request to speak of.
func (c *Client) Unresolved(requestID string) decision.Decision {
	c.log(reviewlog.ForwardingError, map[string]any{
		"requestId": requestID,
		"message": ReasonNoTarget + ": checked --parent, " + EnvRouterParent + " and " + EnvSubagentParent +
			"; subagent integrations should set " + EnvSubagentParent,
	})
	d := decision.NobodyAnswered(ReasonNoTarget)
	c.logFinal(requestID, d)
	return d
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
	target := req.TargetSessionID
	reqPath, err1 := c.Layout.RequestPath(target, req.ID)
	respPath, err2 := c.Layout.ResponsePath(target, req.ID)
	data, err3 := wire.EncodeRequest(req)
	if err := errors.Join(err1, err2, err3); err != nil {
		c.log(reviewlog.ForwardingError, map[string]any{"requestId": req.ID, "message": "invalid request", "error": err.Error()})
		return c.abandon(req, "", ReasonNotWritten)
	}
	// The answer must be bound to these very bytes (wire.CheckBinding).
	digest := wire.RequestDigest(data)

	// Armed before the request exists, so the answer cannot slip past.
	wait, err := c.armWait(ctx, target, respPath)
	if ie := (*inboxError)(nil); errors.As(err, &ie) {
		c.log(reviewlog.ForwardingError, map[string]any{"requestId": req.ID, "message": "preparing the mailbox", "error": err.Error()})
		return c.abandon(req, "", fmt.Sprintf(reasonDirsFormat, target))
	} else if err != nil {
		c.log(reviewlog.ForwardingError, map[string]any{"requestId": req.ID, "message": "watching for the response", "error": err.Error()})
		return c.abandon(req, "", ReasonNotWritten)
	}
	defer wait.stop()

	// A courier broker announces in its heartbeat that it binds every
	// answer; from then on an unbound answer is refused. The flag is
	// sticky: a record rewritten without it later does not lower the bar.
	insist := false
	learnBinding := func(s mailbox.Serving) {
		if s.State == mailbox.ServingAlive && s.Heartbeat.ResponseBinding == wire.BindingSHA256 {
			insist = true
		}
	}
	// Whether the parent binds is read before the request is published (a
	// courier parent announces it even when its liveness is not judged,
	// --no-heartbeat): learned only when an unbound answer arrives, it
	// would let a plant that came first, or a record withdrawn by a
	// restart in between, decide the ask. It matters only for an answer
	// that carries no binding (a bound one is checked field for field
	// either way), so an unbound answer asks again if it is not known yet.
	if s, err := c.Layout.CheckServing(target, c.now()); err == nil {
		learnBinding(s)
	}

	if c.Log != nil {
		c.log(reviewlog.ForwardedRequestCreated, map[string]any{
			"requestId": req.ID, "requesterAgentName": req.RequesterAgentName, "requesterSessionId": req.RequesterSessionID,
			"targetSessionId": target, "requestPath": reqPath, "responsePath": respPath,
		})
	}
	err = c.Layout.WriteRequest(target, req.ID, data)
	if errors.Is(err, fs.ErrNotExist) {
		// The shared watch found responses/ but requests/ is gone: an
		// inbox cleaned up under us. Ensure it and retry, as pi does.
		if err = c.Layout.EnsureInbox(target); err == nil {
			wait.rearm()
			err = c.Layout.WriteRequest(target, req.ID, data)
		}
	}
	if err != nil {
		c.log(reviewlog.ForwardingError, map[string]any{"requestId": req.ID, "message": ReasonNotWritten, "error": err.Error()})
		return c.abandon(req, reqPath, ReasonNotWritten)
	}
	// The shared watch signals what arrives from now on. A file that was
	// there before the request cannot answer it (a broker answers what it
	// read); should it be a plant, the watch's rescan finds and refuses it
	// within RescanInterval, and the broker's answer renamed over it wakes
	// the wait at once.

	timeout := orDefault(c.Timeout, DefaultTimeout)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// The parent's liveness is first judged one LivenessInterval into the
	// wait: an answer that comes sooner proves a serving parent, and most
	// do. (Whether it binds its answers is read at once, below.)
	var liveness <-chan time.Time
	if !c.NoHeartbeat {
		t := time.NewTicker(orDefault(c.LivenessInterval, DefaultLivenessInterval))
		defer t.Stop()
		liveness = t.C
	}
	grace := orDefault(c.Grace, DefaultGrace)
	var unservedSince time.Time
	checkServing := func() (mailbox.Serving, bool) {
		s, err := c.Layout.CheckServing(target, c.now())
		learnBinding(s)
		if err != nil || s.State == mailbox.ServingAlive {
			unservedSince = time.Time{}
			return s, true
		}
		if unservedSince.IsZero() {
			unservedSince = c.now()
		}
		return s, c.now().Sub(unservedSince) < grace
	}
	insisting := func() bool {
		if !insist {
			if s, err := c.Layout.CheckServing(target, c.now()); err == nil {
				learnBinding(s)
			}
		}
		return insist
	}

	// A refused file (see collect) is read again only once something
	// changed: another file is there, or the request is gone.
	var (
		refused bool
		recheck *time.Ticker
		stamp   fileStamp
	)
	defer func() {
		if recheck != nil {
			recheck.Stop()
		}
	}()
	recheckC := func() <-chan time.Time {
		if recheck == nil {
			return nil
		}
		return recheck.C
	}
	answer := func() (decision.Decision, bool) {
		d, got := c.collect(req, reqPath, respPath, digest, insisting, wait.repeats())
		if got == gotRefused {
			refused, stamp = true, stampOf(respPath)
			if recheck == nil {
				recheck = time.NewTicker(orDefault(c.LivenessInterval, DefaultLivenessInterval))
			}
		}
		return d, got == gotAnswer
	}
	worthReading := func() bool {
		if !refused {
			return exists(respPath)
		}
		if stampOf(respPath) != stamp {
			return true
		}
		_, err := os.Lstat(reqPath)
		return errors.Is(err, os.ErrNotExist)
	}

	for {
		var pending <-chan struct{}
		if !refused {
			pending = wait.signal()
		}
		select {
		case <-pending:
			if wait.woken(ctx) {
				if d, ok := answer(); ok {
					return d
				}
			}
		case <-recheckC():
			if worthReading() {
				if d, ok := answer(); ok {
					return d
				}
			}
		case <-ctx.Done():
			if worthReading() {
				if d, ok := answer(); ok {
					return d
				}
			}
			return c.abandon(req, reqPath, ReasonSessionEnded)
		case <-deadline.C:
			if worthReading() {
				if d, ok := answer(); ok {
					return d
				}
			}
			c.log(reviewlog.ForwardingWarning, map[string]any{"requestId": req.ID, "message": fmt.Sprintf("Timed out waiting for forwarded permission response '%s'", respPath)})
			reason := fmt.Sprintf(reasonNoAnswerFormat, target, seconds(timeout))
			c.log(reviewlog.ForwardedResponseTimedOut, map[string]any{
				"requestId": req.ID, "requesterAgentName": req.RequesterAgentName, "targetSessionId": target,
				"responsePath": respPath, "approved": false, "decidedBy": provenance.Unavailable{Reason: reason},
			})
			return c.abandon(req, reqPath, reason)
		case <-liveness:
			s, ok := checkServing()
			if ok {
				continue
			}
			if !refused && exists(respPath) {
				// An answer came in as the grace ran out: take it.
				if d, ok := answer(); ok {
					return d
				}
				continue
			}
			reason := fmt.Sprintf(reasonNotServingFmt, target)
			c.log(reviewlog.ForwardedNoServingSession, map[string]any{
				"requestId": req.ID, "requesterSessionId": req.RequesterSessionID, "targetSessionId": target,
				"servingChannel": "heartbeat", "servingState": s.State.String(), "servingSessionIds": []string{},
				"approved": false, "decidedBy": provenance.Unavailable{Reason: reason},
			})
			return c.abandon(req, reqPath, reason)
		}
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// seconds formats a duration the way pi's `${timeoutMs / 1000}` does.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Milliseconds())/1000, 'f', -1, 64)
}

// What collect made of the file at the answer's path.
type collected int

const (
	gotAnswer  collected = iota // the decision is final
	gotNothing                  // no file there (yet): keep waiting
	gotRefused                  // not the answer, and the request is still there
)

// collect reads the answer at respPath and nests the responder's decider.
// Once it accepts an answer it deletes the request, then the response: in
// that order, a broker restarted in between never finds the request
// without its answer, which it would answer a second time.
//
// A file is refused when it cannot be read or decoded, or when it does not
// answer this request (wire.CheckBinding; insist once the parent's
// heartbeat announced bound answers). While the request is still on disk
// nobody has answered it, so a refused file is a plant or another
// request's answer: collect returns gotRefused, and the caller waits for
// the broker to write its answer over it. Once the request is gone the
// broker has answered (it writes before it removes): the file is read once
// more, and a refusal then is final: unavailable, as pi's unreadable answer.
//
// With waitAbsent, no file at all while the request is on disk is
// gotNothing, not a refusal: the caller's watch will say when one comes.
func (c *Client) collect(req wire.Request, reqPath, respPath, digest string, insist func() bool, waitAbsent bool) (d decision.Decision, got collected) {
	target := req.TargetSessionID
	resp, dropped, readErr := readAnswer(req.ID, respPath, digest, insist)
	if readErr != nil {
		if _, err := os.Lstat(reqPath); err == nil {
			if waitAbsent && errors.Is(readErr, fs.ErrNotExist) {
				return decision.Decision{}, gotNothing
			}
			c.log(reviewlog.ForwardingWarning, map[string]any{
				"requestId": req.ID, "message": "Refused a forwarded permission response; waiting for the parent's own answer",
				"responsePath": respPath, "error": readErr.Error(),
			})
			c.warn(fmt.Errorf("refused %s, waiting for the parent's own answer: %w", respPath, readErr))
			return decision.Decision{}, gotRefused
		}
		resp, dropped, readErr = readAnswer(req.ID, respPath, digest, insist)
	}
	c.discard(reqPath)
	c.discard(respPath)
	// The inbox directories stay: a live broker watches them, and removing
	// requests/ would cost its next child a re-arm of that watch. pi's
	// cleanup order applies when the parent is gone (see abandon).
	for _, d := range dropped {
		c.warn(fmt.Errorf("response %s: dropped %w", respPath, d))
	}
	if readErr != nil {
		c.log(reviewlog.ForwardedResponseReceived, map[string]any{
			"requestId": req.ID, "approved": nil, "state": nil, "denialReason": nil, "responderSessionId": nil,
			"targetSessionId": target, "responsePath": respPath, "error": readErr.Error(),
		})
		reason := ReasonUnreadable
		if errors.Is(readErr, wire.ErrForeignResponse) || errors.Is(readErr, wire.ErrUnboundResponse) {
			reason = ReasonNotBound
		}
		d := decision.NobodyAnswered(reason)
		c.logFinal(req.ID, d)
		return d, gotAnswer
	}
	d = decision.FromResponse(resp)
	if c.Log != nil {
		c.log(reviewlog.ForwardedResponseReceived, map[string]any{
			"requestId": req.ID, "approved": resp.Approved, "state": string(resp.State), "denialReason": nullable(resp.DenialReason),
			"responderSessionId": resp.ResponderSessionID, "targetSessionId": target, "responsePath": respPath, "decidedBy": d.DecidedBy,
		})
	}
	c.logFinal(req.ID, d)
	return d, gotAnswer
}

// readAnswer reads, decodes and checks the binding of the file at respPath.
// insist is asked only about an answer that carries no binding.
func readAnswer(requestID, respPath, digest string, insist func() bool) (wire.Response, []*wire.FieldError, error) {
	data, err := mailbox.ReadFile(respPath)
	if err != nil {
		return wire.Response{}, nil, err
	}
	resp, dropped, err := wire.DecodeResponse(data)
	if err != nil {
		return wire.Response{}, nil, err
	}
	if err := wire.CheckBinding(resp, requestID, digest, !resp.Bound() && insist()); err != nil {
		return wire.Response{}, nil, err
	}
	return resp, dropped, nil
}

// fileStamp tells one file at a path from a later one: a refused answer
// is read again only when the stamp changes.
type fileStamp struct {
	exists     bool
	dev, ino   uint64
	ctim, size int64
}

func stampOf(path string) fileStamp {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileStamp{}
	}
	return fileStamp{exists: true, dev: uint64(st.Dev), ino: st.Ino, ctim: st.Ctim.Nano(), size: st.Size}
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
	event := reviewlog.RequestDenied
	if d.Approved() {
		event = reviewlog.RequestApproved
	}
	outcome := provenance.OutcomeDenied
	switch {
	case d.State == decision.StateApprovedForSession:
		outcome = provenance.OutcomeApprovedForSession
	case d.Approved():
		outcome = provenance.OutcomeApproved
	}
	details := map[string]any{
		"requestId": requestID, "approved": d.Approved(), "state": string(d.State),
		"resolution": string(provenance.ResolutionFor(d.DecidedBy, outcome)), "denialReason": nullable(d.DenialReason),
		"decidedBy": d.DecidedBy,
	}
	if d.State == decision.StateApprovedForSession {
		width := d.SessionGrantWidth
		if width == "" {
			width = wire.GrantProven
		}
		details["sessionGrantWidth"] = string(width)
	}
	c.log(event, details)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
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
	c.log(reviewlog.RequestSessionApproved, map[string]any{
		"requestId": req.ID, "requesterAgentName": req.RequesterAgentName, "requesterSessionId": req.RequesterSessionID,
		"approved": true, "state": string(d.State), "resolution": string(provenance.ResolutionSessionApproved), "decidedBy": d.DecidedBy,
	})
}
