// Package provenance records who decided a permission request.
//
// Every decision courier makes or relays carries a [Source] (the wire's
// `decidedBy`): a tagged union of nine kinds, stamped at the site that
// decides and never inferred from an event name. Sources nest across the
// forwarding hop: a child wraps what its parent sent in a [Forwarded]
// frame, and a relaying broker wraps again.
//
// # Reading untrusted sources
//
// A `decidedBy` read off disk is untrusted. [Decode] is all-or-nothing per
// value and depth-bounded: an unknown kind, a wrong type anywhere, or more
// than [MaxDepth] forwarded frames yields "absent", never a partial value,
// a panic or deep recursion. A response whose `decidedBy` is absent is still
// a valid response; only the provenance is dropped.
//
// # Compatibility
//
// The JSON shapes are pi-permission-system's DecisionSource (25.x). pi
// 20.7.3 has no `decidedBy`; its responses nest as a forwarded frame with a
// null decision.
package provenance

// Kind is the discriminator of a Source, the wire's "kind" member.
type Kind string

// The nine kinds of decider.
const (
	KindUser               Kind = "user"
	KindAuthorizer         Kind = "authorizer"
	KindRule               Kind = "rule"
	KindSessionApproval    Kind = "session_approval"
	KindYolo               Kind = "yolo"
	KindInfrastructureRead Kind = "infrastructure_read"
	KindUnavailable        Kind = "unavailable"
	KindGateError          Kind = "gate_error"
	KindForwarded          Kind = "forwarded"
)

// MaxDepth is the most Forwarded frames a Source may have and still decode,
// pi's MAX_DECISION_SOURCE_DEPTH. A two-level tree needs one; the rest is
// headroom for relaying brokers.
const MaxDepth = 4

// Source is what decided a permission request. It is a closed union: the
// only implementations are the nine types of this package, all value types.
type Source interface {
	// Kind returns the discriminator written as "kind".
	Kind() Kind
	// MarshalJSON writes the pi wire shape, "kind" first.
	MarshalJSON() ([]byte, error)
	sealed()
}

// Via names how a human answered. On the wire it is one of seed 000's two
// literals and nothing else: pi's reader drops a whole decidedBy whose via
// is any other string, so a pi 25.x child would record no decider at all.
type Via string

// The ways a human answers, seed 000's literals. pi's TUI prompt is a
// dialog and its select-list fallback a select; courier's tty prompt, and
// any other operator view courier may grow, is a dialog. Which terminal
// answered is courier's own fact: its review log says it (the broker's
// answer entry's "terminal"), never the union.
const (
	ViaDialog Via = "dialog"
	ViaSelect Via = "select"
)

// legacyViaTerminal is what courier before issue 15 wrote for its tty
// prompt. Decode reads it as ViaDialog, so a response or grant journal of
// an older courier keeps its decider; nothing writes it.
const legacyViaTerminal = "terminal"

// Valid reports whether v is one of seed 000's literals.
func (v Via) Valid() bool { return v == ViaDialog || v == ViaSelect }

// AuthorizerVerdict is an authorizer link's decisive answer. Defer is not a verdict
// that decides, so it never appears in a Source.
type AuthorizerVerdict string

// The two decisive verdicts.
const (
	VerdictAllow AuthorizerVerdict = "allow"
	VerdictDeny  AuthorizerVerdict = "deny"
)

// User is a human's answer at a prompt.
type User struct {
	// Via is ViaDialog or ViaSelect, the only values a reader of the
	// seed's union accepts; Decode yields no other.
	Via Via
}

// Authorizer is a decisive verdict of a named authorizer link.
type Authorizer struct {
	Name    string
	Verdict AuthorizerVerdict
	// Reason is the link's reason, nil when it gave none.
	Reason *string
}

// Rule is a recorded rule (config or built-in) that matched.
type Rule struct {
	Surface string
	// Pattern is the rule's pattern, nil for a surface-wide action.
	Pattern *string
	// Origin says where the rule came from (config layer, built-in,
	// display-value match, ...), nil when unknown.
	Origin *string
}

// SessionApproval is a grant recorded earlier in the session.
type SessionApproval struct {
	Surface string
	Pattern *string
}

// Yolo is yolo mode turning an ask into an allow.
type Yolo struct {
	Pattern *string
}

// InfrastructureRead is the gate's auto-allow of the agent's own files.
type InfrastructureRead struct{}

// Unavailable means nobody could answer; Reason says why. It is never a
// user denial.
type Unavailable struct {
	Reason string
}

// GateError means deciding failed and the request was denied fail-closed.
type GateError struct {
	Reason string
}

// Forwarded is a decision made by another session and relayed here.
type Forwarded struct {
	// ResponderSessionID is the session that answered, nil if unknown.
	ResponderSessionID *string
	// Decision is the responder's own Source, nil when it sent none
	// (an older responder).
	Decision Source
}

func (User) Kind() Kind               { return KindUser }
func (Authorizer) Kind() Kind         { return KindAuthorizer }
func (Rule) Kind() Kind               { return KindRule }
func (SessionApproval) Kind() Kind    { return KindSessionApproval }
func (Yolo) Kind() Kind               { return KindYolo }
func (InfrastructureRead) Kind() Kind { return KindInfrastructureRead }
func (Unavailable) Kind() Kind        { return KindUnavailable }
func (GateError) Kind() Kind          { return KindGateError }
func (Forwarded) Kind() Kind          { return KindForwarded }

func (User) sealed()               {}
func (Authorizer) sealed()         {}
func (Rule) sealed()               {}
func (SessionApproval) sealed()    {}
func (Yolo) sealed()               {}
func (InfrastructureRead) sealed() {}
func (Unavailable) sealed()        {}
func (GateError) sealed()          {}
func (Forwarded) sealed()          {}

// Str returns a pointer to s, for the nullable string fields.
func Str(s string) *string { return &s }

// Effective unwraps Forwarded frames down to the innermost decider. It
// returns nil when s is nil or a responder along the way sent no decision.
func Effective(s Source) Source {
	for {
		f, ok := s.(Forwarded)
		if !ok {
			return s
		}
		s = f.Decision
	}
}

// Depth returns the number of Forwarded frames around the innermost decider.
func Depth(s Source) int {
	n := 0
	for {
		f, ok := s.(Forwarded)
		if !ok {
			return n
		}
		n++
		s = f.Decision
	}
}

// Nest wraps inner, a responder's decision, in a Forwarded frame for the
// session that relays it. If the result would exceed MaxDepth, the frames
// closest to the decider are elided so that the outer hops and the
// effective decider both survive and readers can still decode it.
func Nest(responderSessionID *string, inner Source) Forwarded {
	if Depth(inner) >= MaxDepth {
		inner = elideInnerFrame(inner)
	}
	return Forwarded{ResponderSessionID: responderSessionID, Decision: inner}
}

// elideInnerFrame drops the innermost Forwarded frame of s, keeping its
// decision.
func elideInnerFrame(s Source) Source {
	f, ok := s.(Forwarded)
	if !ok {
		return s
	}
	if _, innerIsFrame := f.Decision.(Forwarded); !innerIsFrame {
		return f.Decision
	}
	return Forwarded{ResponderSessionID: f.ResponderSessionID, Decision: elideInnerFrame(f.Decision)}
}

// The wire shapes (AppendJSON): "kind" first, nullable members always
// present, as pi writes them.

// MarshalJSON implements Source.
func (s User) MarshalJSON() ([]byte, error) { return AppendJSON(nil, s), nil }

// MarshalJSON implements Source.
func (s Authorizer) MarshalJSON() ([]byte, error) { return AppendJSON(nil, s), nil }

// MarshalJSON implements Source.
func (s Rule) MarshalJSON() ([]byte, error) { return AppendJSON(nil, s), nil }

// MarshalJSON implements Source.
func (s SessionApproval) MarshalJSON() ([]byte, error) { return AppendJSON(nil, s), nil }

// MarshalJSON implements Source.
func (s Yolo) MarshalJSON() ([]byte, error) { return AppendJSON(nil, s), nil }

// MarshalJSON implements Source.
func (s InfrastructureRead) MarshalJSON() ([]byte, error) { return AppendJSON(nil, s), nil }

// MarshalJSON implements Source.
func (s Unavailable) MarshalJSON() ([]byte, error) { return AppendJSON(nil, s), nil }

// MarshalJSON implements Source.
func (s GateError) MarshalJSON() ([]byte, error) { return AppendJSON(nil, s), nil }

// MarshalJSON implements Source.
func (s Forwarded) MarshalJSON() ([]byte, error) { return AppendJSON(nil, s), nil }
