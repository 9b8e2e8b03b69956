// Package decision is the outcome of one permission ask, as every part of
// courier passes it around: the broker's rules, chain and terminal produce
// one, the serve loop writes it as a response, and the child prints it.
//
// A Decision always names its decider ([provenance.Source]). The wire form
// is wire.Response; [FromResponse] and [Decision.Response] are the only
// conversions between the two.
package decision

import (
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

// State is what was decided. StateApprovedForServingSession is the
// operator's whole-session grant: it exists only inside the broker, which
// records the grants and writes it to the wire as StateApproved.
type State string

// The decision states (pi's PermissionDecisionState).
const (
	StateApproved                  State = "approved"
	StateApprovedForSession        State = "approved_for_session"
	StateApprovedForServingSession State = "approved_for_serving_session"
	StateDenied                    State = "denied"
	StateDeniedWithReason          State = "denied_with_reason"
)

// Decision is the outcome of one ask.
type Decision struct {
	State State
	// DenialReason is a deny rule's reason, a human's typed reason, or why
	// nobody could answer; empty when there is none.
	DenialReason string
	// DecidedBy is who decided. Every constructor sets it.
	DecidedBy provenance.Source
	// SessionGrantWidth applies to StateApprovedForSession; empty means
	// proven.
	SessionGrantWidth wire.GrantWidth
	// Grants applies to StateApprovedForServingSession only: the
	// whole-session grants the operator chose (edited at the prompt), which
	// the broker records instead of the request's suggestion; nil means the
	// request's suggestion. They never reach the wire: the child of a
	// whole-session answer sees plain approved and records nothing.
	Grants []wire.SuggestedGrant
	// Terminal names the broker terminal the ask was left to, when one
	// gave this decision: "tty" for the operator's prompt (the --terminal
	// values); "" for a decision made before any terminal (rules, grants,
	// the chain) or by one that does not say. It is courier's own fact
	// for its review log and never reaches the wire: there the decider is
	// only seed 000's union, in which the tty prompt is a dialog.
	Terminal string
}

// Approved reports whether the ask may go ahead.
func (d Decision) Approved() bool {
	return d.State == StateApproved || d.State == StateApprovedForSession || d.State == StateApprovedForServingSession
}

// Unavailable reports whether nobody could answer: the decision is a
// denial, but it must never be presented as a user's.
func (d Decision) Unavailable() bool {
	_, ok := provenance.Effective(d.DecidedBy).(provenance.Unavailable)
	return ok && !d.Approved()
}

// Allow approves once.
func Allow(by provenance.Source) Decision {
	return Decision{State: StateApproved, DecidedBy: by}
}

// Deny denies, with a reason when there is one (pi's
// createDeniedPermissionDecision: denied_with_reason carries it).
func Deny(reason string, by provenance.Source) Decision {
	if reason == "" {
		return Decision{State: StateDenied, DecidedBy: by}
	}
	return Decision{State: StateDeniedWithReason, DenialReason: reason, DecidedBy: by}
}

// NobodyAnswered is the decision when no one could answer: a plain denial
// whose reason and decider say why, with one string feeding both so the
// two cannot drift (pi's abandon).
func NobodyAnswered(reason string) Decision {
	return Decision{State: StateDenied, DenialReason: reason, DecidedBy: provenance.Unavailable{Reason: reason}}
}

// FromResponse reads a responder's answer as the decision of the session
// that forwarded the ask: the responder's decider is nested under a
// forwarded frame naming the responder (null when it sent none).
func FromResponse(r wire.Response) Decision {
	return Decision{
		State:             State(r.State),
		DenialReason:      r.DenialReason,
		DecidedBy:         provenance.Nest(provenance.Str(r.ResponderSessionID), r.DecidedBy),
		SessionGrantWidth: r.SessionGrantWidth,
	}
}

// Response is d as the wire answer of the responder session. The internal
// whole-session state goes on the wire as plain approved with the decider
// unchanged (the broker records the grants itself).
func (d Decision) Response(responderSessionID string, respondedAtMillis int64) wire.Response {
	state := wire.State(d.State)
	if d.State == StateApprovedForServingSession {
		state = wire.StateApproved
	}
	r := wire.Response{
		Approved:           d.Approved(),
		State:              state,
		DenialReason:       d.DenialReason,
		ResponderSessionID: responderSessionID,
		RespondedAt:        respondedAtMillis,
		DecidedBy:          d.DecidedBy,
	}
	if state == wire.StateApprovedForSession {
		r.SessionGrantWidth = d.SessionGrantWidth
	}
	return r
}
