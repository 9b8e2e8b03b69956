package authorizer

import (
	"encoding/json"
	"slices"

	"github.com/seed6639df8c/courier/wire"
)

// Evidence is what one authorizer may know about one ask: the projection
// of a [wire.Request] that [Project] builds. An authorizer must treat it as
// read-only; in the broker's process its slices may be shared with other
// links' evidence.
type Evidence struct {
	// RequestID names the ask in the review log.
	RequestID string
	// Source is the kind of gate that raised the ask (tool_call,
	// skill_input, skill_read), empty when the child did not say.
	Source string
	// Surface and Value are the display projection: the child's tool name
	// and its argument. They are for display; decide on Access where it is
	// present.
	Surface, Value string
	// Message is the child's prompt text (pi 20.x children send it).
	Message string
	// Forwarding is who forwarded the ask.
	Forwarding Forwarding
	// Access is the child-fixed access facts, nil when the child sent none
	// (or sent a malformed set, which the reader drops whole).
	Access *AccessFacts
	// SessionApproval is the child's suggested session grants, nil when
	// it suggested none. An allow never records them.
	SessionApproval []SuggestedGrant
	// Payload is the child's prompt payload, a JSON object, nil when
	// absent.
	Payload json.RawMessage
	// RequesterCwd is the child's working directory, nil unless the
	// operator disclosed it to this authorizer (and the child sent one).
	RequesterCwd *string
	// Principal is the child session and agent the ask is scoped to, nil
	// unless the operator disclosed it to this authorizer.
	Principal *Principal
	// Bash is the complete bash input and the units that asked, as two
	// labelled facts; nil unless the ask is a bash ask whose complete input
	// the child fixed structurally (see [BashInput]).
	Bash *BashInput
	// Conversation is the serving session's user-intent text, nil unless
	// the operator disclosed it to this authorizer and the broker has some.
	Conversation *Conversation
}

// BashInput is what a bash ask runs, as the child fixed it: the complete
// input and the units of it that asked. A judge needs both: a unit alone
// hides the chain it runs in (`npm test && git push --force`), and the
// complete input alone hides which part the rules could not allow.
//
// Complete comes from the child's structured fields only, never from its
// prose message: a message is free text a child may word as it likes, and
// authorization must not rest on parsing it.
type BashInput struct {
	// Complete is the whole bash input the agent asked to run.
	Complete string
	// Triggering is the commands of the units that asked (the child's
	// askingUnits), in the child's order; empty, never nil, when the child
	// sent none.
	Triggering []string
}

// Conversation is the user-intent evidence of the serving session: the
// text of its user and assistant turns, newest kept within the operator's
// budget. It is the serving session's conversation, never the child's.
type Conversation struct {
	// Forwarded is true when the ask came from a child session other than
	// the serving one: the conversation is then the serving root's intent,
	// not the child's own reasoning. Every ask through the mailbox is
	// forwarded.
	Forwarded bool
	// RequesterAgent is the requesting agent's name, for a forwarded ask.
	RequesterAgent string
	// Items are the turns, oldest first.
	Items []ConversationItem
}

// ConversationItem is one turn of the serving session's conversation.
type ConversationItem struct {
	// Role is "user" or "assistant".
	Role string
	// Text is the turn's text.
	Text string
	// Derived marks a compaction summary: text a model derived from the
	// conversation, not the user's words, so it is untrusted evidence.
	Derived bool
}

// Forwarding is the forwarding provenance of an ask: the requesting
// agent's name and session.
type Forwarding struct {
	RequesterAgentName string
	RequesterSessionID string
}

// AccessFacts are the child-fixed facts of an ask: [wire.AccessIntent]
// without the requester's identity.
type AccessFacts struct {
	// Surface is the gate surface: bash, path, path_read, a tool name...
	Surface string
	// MatchValues are the values the rules were matched against, as the
	// child fixed them.
	MatchValues []string
	// BoundaryValue is the canonical path on path surfaces, nil otherwise.
	BoundaryValue *string
	// Floor is a synthetic floor sentinel such as <opaque-bash-wrapper>,
	// empty when absent.
	Floor string
	// AskingUnits lists the bash chain units that asked.
	AskingUnits []AskingUnit
}

// AskingUnit is one bash chain unit that asked: [wire.AskingUnit] as an
// authorizer sees it (rules.AskingUnit is the same unit in the query the
// recorded rules answer).
type AskingUnit struct {
	Command string
	// Floor is empty when absent.
	Floor string
}

// SuggestedGrant is one session grant the child suggested with its ask:
// Pattern on Surface, [wire.SuggestedGrant] as an authorizer sees it. It is only a
// suggestion: an authorizer's allow approves the ask once and records no
// grant (the grants the broker records are rules.SessionGrant).
type SuggestedGrant struct {
	Surface string
	Pattern string
}

// Principal is who asked: the child session and its agent, [wire.Principal]
// as an authorizer sees it when the operator disclosed it.
type Principal struct {
	SessionID string
	AgentName string
}

// Disclosure is what the operator discloses to one link beyond the
// child-fixed facts (the link's "disclose" in the authorizerChain config).
// The zero Disclosure discloses nothing.
type Disclosure struct {
	// Cwd discloses accessIntent.requesterCwd: a judge needs it to know
	// what a relative path in a command means.
	Cwd bool
	// Principal discloses accessIntent.principal.
	Principal bool
	// Conversation discloses the serving session's user-intent text (the
	// broker's --intent transcript): the most sensitive evidence a link can
	// get, so it is never disclosed by default.
	Conversation bool
}

// Project builds the evidence one link sees of req, field by field. The
// requester's working directory and principal are included only as d
// discloses them; the target session, the creation time and the child's
// process id are never included. Project copies every slice, so no link
// can alter another's evidence or the request. It never includes a
// conversation: [ProjectWithConversation] does, for the broker.
//
// Every field of wire.Request and the types under it is classified in
// evidence_test.go as projected, disclosed or withheld; adding a field
// there fails the tests until it is classified.
func Project(req wire.Request, d Disclosure) Evidence {
	return ProjectWithConversation(req, d, nil)
}

// ProjectWithConversation is [Project] with the serving session's
// conversation: when d discloses it, conversation is called (once) and
// its items become the evidence's [Conversation], labelled forwarded with
// the requester's agent name (every request through the mailbox comes
// from a child session). A nil conversation, a nil result or one without
// items leaves Evidence.Conversation nil: a link is never told of an
// empty conversation as though the user had said nothing.
func ProjectWithConversation(req wire.Request, d Disclosure, conversation func() *Conversation) Evidence {
	ev := Evidence{
		RequestID: req.ID,
		Source:    string(req.Source),
		Surface:   req.Surface,
		Value:     req.Value,
		Message:   req.Message,
		Forwarding: Forwarding{
			RequesterAgentName: req.RequesterAgentName,
			RequesterSessionID: req.RequesterSessionID,
		},
		Payload: slices.Clone(req.Payload),
	}
	if sa := req.SessionApproval; sa != nil && len(sa.Grants) > 0 {
		ev.SessionApproval = make([]SuggestedGrant, len(sa.Grants))
		for i, g := range sa.Grants {
			ev.SessionApproval[i] = SuggestedGrant{Surface: g.Surface, Pattern: g.Pattern}
		}
	}
	if ai := req.AccessIntent; ai != nil {
		ev.Access = projectAccess(ai)
		if d.Cwd && ai.RequesterCwd != "" {
			cwd := ai.RequesterCwd
			ev.RequesterCwd = &cwd
		}
		if d.Principal {
			ev.Principal = &Principal{SessionID: ai.Principal.SessionID, AgentName: ai.Principal.AgentName}
		}
	}
	ev.Bash = projectBash(req)
	if d.Conversation && conversation != nil {
		if c := conversation(); c != nil && len(c.Items) > 0 {
			ev.Conversation = &Conversation{
				Forwarded:      true,
				RequesterAgent: req.RequesterAgentName,
				Items:          slices.Clone(c.Items),
			}
		}
	}
	return ev
}

// projectAccess copies the child-fixed facts of ai and nothing else: its
// RequesterCwd and Principal are provenance, disclosed separately.
func projectAccess(ai *wire.AccessIntent) *AccessFacts {
	facts := &AccessFacts{
		Surface:     ai.Surface,
		MatchValues: slices.Clone(ai.MatchValues),
		Floor:       ai.Floor,
	}
	if ai.BoundaryValue != nil {
		b := *ai.BoundaryValue
		facts.BoundaryValue = &b
	}
	if len(ai.AskingUnits) > 0 {
		facts.AskingUnits = make([]AskingUnit, len(ai.AskingUnits))
		for i, u := range ai.AskingUnits {
			facts.AskingUnits[i] = AskingUnit{Command: u.Command, Floor: u.Floor}
		}
	}
	return facts
}
