package agenthook

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// DefaultParent is the broker's session the hook forwards to when neither
// a flag nor EnvSession names one: `broker serve --session courier` pairs
// with it, whatever the agent's own session id.
const DefaultParent = "courier"

// EnvSession names the environment variable that names the broker's
// session, below the --parent flag.
const EnvSession = "COURIER_SESSION"

// MainMode says what becomes of the main agent's asks (no agent_id).
type MainMode int

// The main-agent modes.
const (
	// MainSkip leaves them to the agent: no output, its own prompt asks.
	MainSkip MainMode = iota
	// MainForward forwards them as the agent's session's.
	MainForward
)

// UnavailableMode says what the hook answers when nobody could decide.
type UnavailableMode int

// The unavailable modes.
const (
	// UnavailableNone prints nothing: the agent's own flow decides.
	UnavailableNone UnavailableMode = iota
	// UnavailableDeny denies, naming why.
	UnavailableDeny
)

// Forwarder sends one request to the broker and waits for its decision;
// *forward.Client is one.
type Forwarder interface {
	Forward(ctx context.Context, req wire.Request) decision.Decision
	LogLocal(req wire.Request, d decision.Decision)
}

// LocalGrants are one requesting session's "this subagent only" grants;
// *forward.LocalGrants is one (a nil one resolves nothing).
type LocalGrants interface {
	Resolve(req wire.Request) (decision.Decision, bool)
	Record(req wire.Request, d decision.Decision) error
}

// Hook answers hook events for one agent CLI.
type Hook struct {
	CLI CLI
	// Parent is the broker's session (see DefaultParent).
	Parent      string
	Main        MainMode
	Unavailable UnavailableMode
	Forwarder   Forwarder
	// Layout is the mailbox, where the parent's heartbeat is read before
	// the first ask is written: a parent with no heartbeat, or one left by
	// a process that is gone, makes the ask unavailable at once rather
	// than after the forwarding grace.
	Layout mailbox.Layout
	// OpenGrants opens a requesting session's own grants; nil keeps none.
	OpenGrants func(session string) (LocalGrants, error)
	// Home expands `~` in suggested grants, as the broker's rules do.
	Home string
	// NewID mints request ids; nil is forward.NewRequestID.
	NewID func() (string, error)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Warn receives problems that do not change the answer; nil drops them.
	Warn func(error)
}

// Result is the hook's answer to one event: the bytes for stdout (nil for
// none), the answer they render, and a line for stderr (empty for none).
type Result struct {
	Answer Answer
	Stdout []byte
	Diag   string
}

// MaxSessionID bounds a requesting session id from an event.
const MaxSessionID = 128

// CheckSessionID reports why id cannot be a requesting session, or nil:
// the ids the agents send (Claude's a8f2c355829900d95, Codex's uuid) are
// letters, digits, '.', '_' and '-', and nothing else may reach a mailbox
// or a grants journal name (`../x`, `/`, NUL, a name too long to be one).
func CheckSessionID(id string) error {
	if id == "" || len(id) > MaxSessionID {
		return fmt.Errorf("expected 1 to %d characters, got %d", MaxSessionID, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || (i > 0 && strings.IndexByte("._-", c) >= 0)
		if !ok {
			return fmt.Errorf("expected letters, digits, '.', '_' or '-' (not first), got %q at byte %d", c, i)
		}
	}
	if _, err := mailbox.EscapeSessionID(id); err != nil {
		return err
	}
	return nil
}

// Handle answers one event, given as the bytes read from stdin. It never
// allows unless every ask the event maps to was allowed by the broker (or
// by the session's own grants).
func (h *Hook) Handle(ctx context.Context, data []byte) (res Result) {
	var name EventName
	defer func() {
		// A bug must not end the process before it answers, nor answer
		// allow: it is an ask nobody could decide.
		if r := recover(); r != nil {
			res = h.unavailable(name, fmt.Sprintf("the hook failed: %v", r))
		}
	}()
	ev, err := Decode(data)
	name = ev.Name
	if err != nil {
		return h.unavailable(ev.Name, fmt.Sprintf("the event cannot be read: %v", err))
	}
	session := ev.AgentID
	if session == "" {
		if h.Main == MainSkip {
			return Result{}
		}
		session = ev.SessionID
	}
	if err := CheckSessionID(session); err != nil {
		return h.unavailable(ev.Name, fmt.Sprintf("the asking session %q cannot name a mailbox session: %v", session, err))
	}
	agent := ev.AgentType
	if agent == "" {
		agent = string(h.CLI)
	}
	asks, err := Asks(ev, session, agent)
	if err != nil {
		return h.unavailable(ev.Name, fmt.Sprintf("the %s call cannot be forwarded: %v", ev.ToolName, err))
	}
	if h.CLI == Codex && ev.ToolName == "Bash" {
		// Codex runs the command in its exec call's workdir, which the
		// event does not carry: the event's cwd is the turn's. Sent as
		// unknown, the broker's self-approval guard places a relative
		// word anywhere it could be, not in a directory it may not be.
		for i := range asks {
			asks[i].Cwd = ""
		}
	}
	var local LocalGrants
	if h.OpenGrants != nil {
		if local, err = h.OpenGrants(session); err != nil {
			h.warn(fmt.Errorf("the grants of session %q are not used: %w", session, err))
			local = nil
		}
	}
	var summaries []string
	var unanswered *decision.Decision
	serving := false
	for _, ask := range asks {
		req, err := h.request(ask)
		if err != nil {
			return h.unavailable(ev.Name, fmt.Sprintf("the ask cannot be built: %v", err))
		}
		admitSuggestions(h.Home, &req, Grants(ev.Suggestions, ask.Surface))
		d, ok := decision.Decision{}, false
		if local != nil {
			d, ok = local.Resolve(req)
		}
		if ok {
			h.Forwarder.LogLocal(req, d)
		} else {
			if ctx.Err() != nil {
				// Out of time (--timeout, or the agent gave up): no more
				// requests for a broker to answer nobody.
				d = decision.NobodyAnswered(fmt.Sprintf("no time left to ask for %s: %v", ask.Value, context.Cause(ctx)))
				if unanswered == nil {
					unanswered = &d
				}
				continue
			}
			if !serving {
				if d, ok = h.notServing(); ok {
					return h.decided(ev.Name, d)
				}
				serving = true
			}
			d = h.Forwarder.Forward(ctx, req)
			if local != nil {
				if err := local.Record(req, d); err != nil {
					h.warn(err)
				}
			}
		}
		switch {
		case d.Unavailable():
			// Not the end: a later file of the patch may be denied, and
			// any deny denies. One unanswered leaves the patch undecided.
			if unanswered == nil {
				unanswered = &d
			}
		case !d.Approved():
			return h.decided(ev.Name, d)
		default:
			summaries = append(summaries, d.Summary())
		}
	}
	if unanswered != nil {
		return h.decided(ev.Name, *unanswered)
	}
	a := Answer{Verdict: VerdictAllow, Message: MessagePrefix + strings.Join(summaries, "; ")}
	return Result{Answer: a, Stdout: Render(h.CLI, ev.Name, a), Diag: a.Message}
}

// request builds the wire request of one ask, to Parent.
func (h *Hook) request(ask forward.Ask) (wire.Request, error) {
	newID := h.NewID
	if newID == nil {
		newID = forward.NewRequestID
	}
	id, err := newID()
	if err != nil {
		return wire.Request{}, err
	}
	return ask.Request(id, h.Parent, h.now().UnixMilli())
}

// notServing is the unavailable decision when the parent's heartbeat is
// absent or was left by a process that is gone: no broker serves it, and
// none will within the forwarding grace. A stale heartbeat (a broker
// stalled, or restarting) is left to Forward, which waits out the grace.
func (h *Hook) notServing() (decision.Decision, bool) {
	if h.Layout.Root == "" {
		return decision.Decision{}, false
	}
	s, err := h.Layout.CheckServing(h.Parent, h.now())
	if err != nil || (s.State != mailbox.ServingAbsent && s.State != mailbox.ServingDeadPID) {
		return decision.Decision{}, false
	}
	// pi's sentence, as forward gives it for a parent that stopped serving.
	return decision.NobodyAnswered(fmt.Sprintf("Session '%s' is not serving forwarded permission requests", h.Parent)), true
}

// decided answers with the decision d of the ask that was not allowed.
func (h *Hook) decided(event EventName, d decision.Decision) Result {
	if d.Unavailable() {
		return h.unavailable(event, d.Summary())
	}
	a := Answer{Verdict: VerdictDeny, Message: MessagePrefix + d.Summary()}
	return Result{Answer: a, Stdout: Render(h.CLI, event, a), Diag: a.Message}
}

// unavailable is the answer when nobody could decide: nothing, or a deny
// naming why (UnavailableDeny). An event whose name was never read gets
// nothing either way: no shape is known to be honoured for it.
func (h *Hook) unavailable(event EventName, why string) Result {
	msg := MessagePrefix + why
	if !strings.HasPrefix(why, "unavailable: ") {
		msg = MessagePrefix + "unavailable: " + why
	}
	if h.Unavailable != UnavailableDeny || event == "" {
		return Result{Diag: msg + " (no decision: the agent's own flow decides)"}
	}
	a := Answer{Verdict: VerdictDeny, Message: msg}
	return Result{Answer: a, Stdout: Render(h.CLI, event, a), Diag: msg}
}

func (h *Hook) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Hook) warn(err error) {
	if err != nil && h.Warn != nil {
		h.Warn(err)
	}
}

// Unanswered is the answer to the event in data when nobody can be asked
// at all (the mailbox root does not exist): what Handle gives for an
// unavailable decision, why naming the reason; a main agent's event left
// to the agent still gets nothing.
func (h *Hook) Unanswered(data []byte, why string) Result {
	ev, err := Decode(data)
	if err == nil && ev.AgentID == "" && h.Main == MainSkip {
		return Result{}
	}
	return h.unavailable(ev.Name, why)
}
