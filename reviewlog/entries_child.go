package reviewlog

import "encoding/json"

// The entries a child (package forward) writes about the asks it forwards.
// Each type's comment is its event's documentation; the keys are listed as
// the line holds them.

// ForwardedRequestCreatedEntry ([ForwardedRequestCreated]) is written by
// the child just before it drops a request file into its parent's
// mailbox.
//
// Keys: requestId, requestPath, requestSha256 (when set),
// requesterAgentName, requesterSessionId, responsePath, targetSessionId.
type ForwardedRequestCreatedEntry struct {
	RequestID string
	// RequestSHA256 is the digest of the request's bytes; "" writes no
	// requestSha256 key.
	RequestSHA256      string
	RequesterAgentName string
	RequesterSessionID string
	// TargetSessionID is the parent session asked.
	TargetSessionID string
	// RequestPath is the request file; ResponsePath is where the answer
	// is awaited.
	RequestPath, ResponsePath string
}

// ForwardedResponseReceivedEntry ([ForwardedResponseReceived]) is written
// by the child when it took the file at the response path: the parent's
// answer, or a file it could not read as one. The child's terminal entry
// ([RequestApprovedEntry], [RequestDeniedEntry]) follows it.
//
// Keys: approved, decidedBy (not when Error is set), denialReason, error
// (only when Error is set), requestId, requestSha256 (when set),
// responderSessionId, responsePath, state, targetSessionId.
type ForwardedResponseReceivedEntry struct {
	RequestID string
	// RequestSHA256 is the digest of the request's bytes, which the
	// answer is bound to; "" writes no requestSha256 key.
	RequestSHA256   string
	TargetSessionID string
	ResponsePath    string
	// Error, when set, is why the file could not be taken as the answer:
	// approved, denialReason, responderSessionId and state are then null,
	// whatever the fields below hold, and no decidedBy is written.
	Error error
	// What the response said.
	Approved bool
	State    string
	// DenialReason "" writes null.
	DenialReason       string
	ResponderSessionID string
	// DecidedBy is the responder's decider nested in a forwarded frame.
	DecidedBy json.Marshaler
}

// ForwardedNoServingSessionEntry ([ForwardedNoServingSession]) is written
// by the child when it gives up because no live session serves the target
// mailbox. Its approved is always false.
//
// Keys: approved, decidedBy, requestId, requestSha256 (when set),
// requesterSessionId, servingChannel, servingSessionIds, servingState,
// targetSessionId.
type ForwardedNoServingSessionEntry struct {
	RequestID string
	// RequestSHA256 is the digest of the request's bytes; "" writes no
	// requestSha256 key.
	RequestSHA256      string
	RequesterSessionID string
	TargetSessionID    string
	// ServingChannel is how liveness was judged ("heartbeat"), and
	// ServingState what was found.
	ServingChannel, ServingState string
	// ServingSessionIDs lists the live sessions found; nil writes null.
	ServingSessionIDs []string
	// DecidedBy is the unavailable decider.
	DecidedBy json.Marshaler
}

// ForwardedResponseTimedOutEntry ([ForwardedResponseTimedOut]) is written
// by the child when no response arrived in time. Its approved is always
// false.
//
// Keys: approved, decidedBy, requestId, requestSha256 (when set),
// requesterAgentName, responsePath, targetSessionId.
type ForwardedResponseTimedOutEntry struct {
	RequestID string
	// RequestSHA256 is the digest of the request's bytes; "" writes no
	// requestSha256 key.
	RequestSHA256      string
	RequesterAgentName string
	TargetSessionID    string
	ResponsePath       string
	// DecidedBy is the unavailable decider.
	DecidedBy json.Marshaler
}

// RequestApprovedEntry ([RequestApproved]) is the terminal entry of an ask
// that was allowed, on the node where it was asked: courier's child writes
// it for the asks it forwarded.
//
// Keys: approved (true), decidedBy, denialReason, requestId, resolution,
// sessionGrantWidth (only when set), state.
type RequestApprovedEntry struct {
	RequestID string
	// State is the decision's state (approved, approved_for_session, …)
	// and Resolution pi's name for how it came about (user_approved,
	// policy_deny, …).
	State, Resolution string
	// DenialReason "" writes null.
	DenialReason string
	DecidedBy    json.Marshaler
	// SessionGrantWidth is the width of a grant for this session
	// (approved_for_session); "" writes no sessionGrantWidth key.
	SessionGrantWidth string
}

// RequestDeniedEntry ([RequestDenied]) is [RequestApprovedEntry]'s denying
// twin: its approved is false. A child that gave up on an ask (no parent,
// no answer in time) writes it too, decided by unavailable.
type RequestDeniedEntry RequestApprovedEntry

// RequestSessionApprovedEntry ([RequestSessionApproved]) is the terminal
// entry of an ask a session grant allowed where it was asked, without
// forwarding it. Its approved is always true.
//
// Keys: approved, decidedBy, requestId, requesterAgentName,
// requesterSessionId, resolution, state.
type RequestSessionApprovedEntry struct {
	RequestID          string
	RequesterAgentName string
	RequesterSessionID string
	State, Resolution  string
	DecidedBy          json.Marshaler
}

func (ForwardedRequestCreatedEntry) Event() string   { return ForwardedRequestCreated }
func (ForwardedResponseReceivedEntry) Event() string { return ForwardedResponseReceived }
func (ForwardedNoServingSessionEntry) Event() string { return ForwardedNoServingSession }
func (ForwardedResponseTimedOutEntry) Event() string { return ForwardedResponseTimedOut }
func (RequestApprovedEntry) Event() string           { return RequestApproved }
func (RequestDeniedEntry) Event() string             { return RequestDenied }
func (RequestSessionApprovedEntry) Event() string    { return RequestSessionApproved }

func (e ForwardedRequestCreatedEntry) appendDetails(d details) {
	d.str(KeyRequestID, e.RequestID)
	d.str("requestPath", e.RequestPath)
	d.strIfSet(KeyRequestSHA256, e.RequestSHA256)
	d.str("requesterAgentName", e.RequesterAgentName)
	d.str("requesterSessionId", e.RequesterSessionID)
	d.str("responsePath", e.ResponsePath)
	d.str("targetSessionId", e.TargetSessionID)
}

func (e ForwardedResponseReceivedEntry) appendDetails(d details) {
	if e.Error != nil {
		d.null(KeyApproved)
		d.null("denialReason")
		d.errText("error", e.Error)
		d.str(KeyRequestID, e.RequestID)
		d.strIfSet(KeyRequestSHA256, e.RequestSHA256)
		d.null("responderSessionId")
		d.str("responsePath", e.ResponsePath)
		d.null(KeyState)
		d.str("targetSessionId", e.TargetSessionID)
		return
	}
	d.boolean(KeyApproved, e.Approved)
	d.decidedBy(e.DecidedBy)
	d.strOrNull("denialReason", e.DenialReason)
	d.str(KeyRequestID, e.RequestID)
	d.strIfSet(KeyRequestSHA256, e.RequestSHA256)
	d.str("responderSessionId", e.ResponderSessionID)
	d.str("responsePath", e.ResponsePath)
	d.str(KeyState, e.State)
	d.str("targetSessionId", e.TargetSessionID)
}

func (e ForwardedNoServingSessionEntry) appendDetails(d details) {
	d.boolean(KeyApproved, false)
	d.decidedBy(e.DecidedBy)
	d.str(KeyRequestID, e.RequestID)
	d.strIfSet(KeyRequestSHA256, e.RequestSHA256)
	d.str("requesterSessionId", e.RequesterSessionID)
	d.str("servingChannel", e.ServingChannel)
	d.strs("servingSessionIds", e.ServingSessionIDs)
	d.str("servingState", e.ServingState)
	d.str("targetSessionId", e.TargetSessionID)
}

func (e ForwardedResponseTimedOutEntry) appendDetails(d details) {
	d.boolean(KeyApproved, false)
	d.decidedBy(e.DecidedBy)
	d.str(KeyRequestID, e.RequestID)
	d.strIfSet(KeyRequestSHA256, e.RequestSHA256)
	d.str("requesterAgentName", e.RequesterAgentName)
	d.str("responsePath", e.ResponsePath)
	d.str("targetSessionId", e.TargetSessionID)
}

func (e RequestApprovedEntry) appendDetails(d details) { e.appendOutcome(d, true) }
func (e RequestDeniedEntry) appendDetails(d details) {
	RequestApprovedEntry(e).appendOutcome(d, false)
}

func (e RequestApprovedEntry) appendOutcome(d details, approved bool) {
	d.boolean(KeyApproved, approved)
	d.decidedBy(e.DecidedBy)
	d.strOrNull("denialReason", e.DenialReason)
	d.str(KeyRequestID, e.RequestID)
	d.str(KeyResolution, e.Resolution)
	d.strIfSet("sessionGrantWidth", e.SessionGrantWidth)
	d.str(KeyState, e.State)
}

func (e RequestSessionApprovedEntry) appendDetails(d details) {
	d.boolean(KeyApproved, true)
	d.decidedBy(e.DecidedBy)
	d.str(KeyRequestID, e.RequestID)
	d.str("requesterAgentName", e.RequesterAgentName)
	d.str("requesterSessionId", e.RequesterSessionID)
	d.str(KeyResolution, e.Resolution)
	d.str(KeyState, e.State)
}
