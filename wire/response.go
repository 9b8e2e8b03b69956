package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/seed6639df8c/courier/provenance"
)

// State is a decision state.
type State string

// The decision states. StateApprovedForServingSession is internal to the
// broker (a whole-session grant); it is written to the wire as
// StateApproved and EncodeResponse refuses it.
const (
	StateApproved                  State = "approved"
	StateApprovedForSession        State = "approved_for_session"
	StateApprovedForServingSession State = "approved_for_serving_session"
	StateDenied                    State = "denied"
	StateDeniedWithReason          State = "denied_with_reason"
)

// Approves reports whether s is one of the approving states.
func (s State) Approves() bool {
	return s == StateApproved || s == StateApprovedForSession || s == StateApprovedForServingSession
}

func (s State) known() bool {
	return s.Approves() || s == StateDenied || s == StateDeniedWithReason
}

// GrantWidth says how widely a child records an approved_for_session grant.
type GrantWidth string

// The grant widths. An absent width means GrantProven, the least privilege.
const (
	GrantProven GrantWidth = "proven"
	GrantFamily GrantWidth = "family"
)

// ErrInternalState is returned when asked to write a state that never goes
// on the wire.
var ErrInternalState = errors.New("approved_for_serving_session is internal to the broker and never written")

// Response is a ForwardedPermissionResponse, responses/<id>.json: the
// serving node's answer. pi 20.7.3 writes only the first five fields and
// ignores the rest.
type Response struct {
	Approved bool
	State    State
	// DenialReason is a deny rule's reason or the human's typed reason;
	// empty when absent.
	DenialReason       string
	ResponderSessionID string
	// RespondedAt is ms since the epoch. A response without it reads as the
	// time it was read, as pi's reader does.
	RespondedAt int64
	// DecidedBy is what decided at the responder, nil when it sent none or
	// sent one that did not decode (the response is still valid).
	DecidedBy provenance.Source
	// SessionGrantWidth is empty when absent (meaning GrantProven).
	SessionGrantWidth GrantWidth

	// RequestID and RequestSHA256 bind the response to the request it
	// answers (courier's extension, see CheckBinding and Bind; pi readers
	// ignore both): the request's id and the RequestDigest of its bytes.
	// Empty when absent.
	RequestID     string
	RequestSHA256 string
	// bound records that the file carried either binding member, even a
	// malformed one: a malformed binding never matches.
	bound bool
}

// DecodeResponse reads a response file. approved, state and
// responderSessionId are required; an unknown state, or an approved flag
// that contradicts the state, rejects the whole response (the child then
// treats it as unreadable: never a silent allow). A malformed decidedBy or
// sessionGrantWidth is dropped alone and reported in dropped. A malformed
// requestId or requestSha256 is dropped too, but the response still counts
// as bound (Bound), so CheckBinding refuses it.
func DecodeResponse(data []byte) (resp Response, dropped []*FieldError, err error) {
	o, err := parseObject(data)
	if err != nil {
		return Response{}, nil, err
	}
	raw, ok := o.get("approved")
	if !ok {
		return Response{}, nil, &FieldError{Field: "approved", Reason: "missing, expected a boolean"}
	}
	if c := kindOf(raw); c != 't' && c != 'f' {
		return Response{}, nil, &FieldError{Field: "approved", Reason: "expected a boolean, got " + describe(raw)}
	}
	resp.Approved = kindOf(raw) == 't'
	state, ferr := o.str("state", "state")
	if ferr != nil {
		return Response{}, nil, ferr
	}
	resp.State = State(state)
	if !resp.State.known() {
		return Response{}, nil, &FieldError{Field: "state", Reason: fmt.Sprintf("unknown state %q, expected approved, approved_for_session, denied or denied_with_reason", state)}
	}
	if resp.Approved != resp.State.Approves() {
		return Response{}, nil, &FieldError{Field: "approved", Reason: fmt.Sprintf("approved=%t contradicts state %q", resp.Approved, state)}
	}
	if resp.ResponderSessionID, ferr = o.nonEmptyStr("responderSessionId", "responderSessionId"); ferr != nil {
		return Response{}, nil, ferr
	}
	if raw, ok := o.get("respondedAt"); ok {
		if resp.RespondedAt, ferr = rawMillis(raw, "respondedAt"); ferr != nil {
			return Response{}, nil, ferr
		}
	} else {
		resp.RespondedAt = nowMillis()
	}

	drop := func(ferr *FieldError) { dropped = append(dropped, ferr) }
	if raw, ok := o.get("denialReason"); ok && !isNull(raw) {
		if resp.DenialReason, ferr = rawString(raw, "denialReason"); ferr != nil {
			drop(ferr)
		}
	}
	if raw, ok := o.get("decidedBy"); ok && !isNull(raw) {
		if src, ok := provenance.Decode(raw); ok {
			resp.DecidedBy = src
		} else {
			drop(&FieldError{Field: "decidedBy", Reason: "not a well-formed decision source (unknown kind, wrong types, or nested deeper than 4)"})
		}
	}
	if raw, ok := o.get("sessionGrantWidth"); ok {
		w, ferr := rawString(raw, "sessionGrantWidth")
		switch gw := GrantWidth(w); {
		case ferr != nil:
			drop(ferr)
		case gw == GrantProven || gw == GrantFamily:
			resp.SessionGrantWidth = gw
		default:
			drop(&FieldError{Field: "sessionGrantWidth", Reason: fmt.Sprintf("unknown width %q, expected proven or family", w)})
		}
	}
	for _, field := range []string{"requestId", "requestSha256"} {
		raw, ok := o.get(field)
		if !ok {
			continue
		}
		resp.bound = true
		v, ferr := rawString(raw, field)
		switch {
		case ferr != nil:
			drop(ferr)
		case field == "requestId" && ValidateID(v) != nil:
			drop(&FieldError{Field: field, Reason: "not a valid request id"})
		case field == "requestSha256" && !isSHA256Hex(v):
			drop(&FieldError{Field: field, Reason: "expected 64 lower-case hex digits"})
		case field == "requestId":
			resp.RequestID = v
		default:
			resp.RequestSHA256 = v
		}
	}
	return resp, dropped, nil
}

type responseWire struct {
	Approved           bool              `json:"approved"`
	State              State             `json:"state"`
	DenialReason       string            `json:"denialReason,omitempty"`
	ResponderSessionID string            `json:"responderSessionId"`
	RespondedAt        int64             `json:"respondedAt"`
	DecidedBy          provenance.Source `json:"decidedBy,omitempty"`
	SessionGrantWidth  GrantWidth        `json:"sessionGrantWidth,omitempty"`
	RequestID          string            `json:"requestId,omitempty"`
	RequestSHA256      string            `json:"requestSha256,omitempty"`
}

// EncodeResponse writes r as compact JSON in pi's member order, readable
// by both pi generations. It refuses the internal whole-session state and
// an approved flag that contradicts the state.
func EncodeResponse(r Response) ([]byte, error) {
	if r.State == StateApprovedForServingSession {
		return nil, ErrInternalState
	}
	if !r.State.known() {
		return nil, fmt.Errorf("encode response: unknown state %q", r.State)
	}
	if r.Approved != r.State.Approves() {
		return nil, fmt.Errorf("encode response: approved=%t contradicts state %q", r.Approved, r.State)
	}
	if r.ResponderSessionID == "" {
		return nil, errors.New("encode response: a responder session id is required")
	}
	if (r.RequestID == "") != (r.RequestSHA256 == "") {
		return nil, errors.New("encode response: a binding needs both the request id and its sha256")
	}
	return encodeCompact(responseWire{
		Approved: r.Approved, State: r.State, DenialReason: r.DenialReason,
		ResponderSessionID: r.ResponderSessionID, RespondedAt: r.RespondedAt, DecidedBy: r.DecidedBy,
		SessionGrantWidth: r.SessionGrantWidth, RequestID: r.RequestID, RequestSHA256: r.RequestSHA256,
	})
}

// nowMillis is the clock for a response without respondedAt; tests pin it.
var nowMillis = func() int64 { return time.Now().UnixMilli() }
