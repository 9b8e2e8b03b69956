package reviewlog

// Event names. They are pi-permission-system's review-log catalogue, spelled
// exactly as pi spells them, so one log file can hold lines from pi nodes and
// courier nodes and one reader can census both. Events courier adds use the
// same dotted families.
//
// "Terminal" below means the entry records the final decision of an ask on
// the node that writes it, and carries decidedBy.
const (
	// ForwardedRequestCreated is written by the child after it drops a
	// request file into its parent's mailbox. Details: requestId,
	// requesterAgentName, requesterSessionId, targetSessionId, requestPath,
	// responsePath.
	ForwardedRequestCreated = "forwarded_permission.request_created"

	// ForwardedResponseReceived is the child's terminal entry for a
	// forwarded ask that was answered. Details: requestId, approved, state,
	// denialReason, responderSessionId, targetSessionId, responsePath, and
	// decidedBy {kind:"forwarded"} nesting what the responder sent.
	ForwardedResponseReceived = "forwarded_permission.response_received"

	// ForwardedNoServingSession is written by the child when it gives up
	// because no live session serves the target mailbox. Details: requestId,
	// requesterSessionId, targetSessionId, servingChannel, servingState,
	// servingSessionIds.
	ForwardedNoServingSession = "forwarded_permission.no_serving_session"

	// ForwardedResponseTimedOut is written by the child when no response
	// arrived in time. Details: requestId, requesterAgentName,
	// targetSessionId, responsePath.
	ForwardedResponseTimedOut = "forwarded_permission.response_timed_out"

	// ForwardedSessionReloaded is written by a broker that took in its
	// grant journal after someone else changed it (broker grants revoke, an
	// edit). Details: sessionId, journal, grants (how many now), revoked
	// and added (what changed).
	ForwardedSessionReloaded = "forwarded_permission.session_reloaded"

	// ForwardedRelayStarted is written by a node that starts relaying its
	// asks to its own parent (multi-hop). Details: targetSessionId, channel.
	ForwardedRelayStarted = "forwarded_permission.relay_started"

	// ForwardedRelayStopped ends what ForwardedRelayStarted began.
	ForwardedRelayStopped = "forwarded_permission.relay_stopped"

	// ForwardedServingStarted is written when a node starts serving a
	// mailbox. Details: sessionId, which cross-node diagnosis compares with
	// the child's request_created targetSessionId.
	ForwardedServingStarted = "forwarded_permission.serving_started"

	// ForwardedServingStopped is written when a node stops serving.
	// Details: sessionId.
	ForwardedServingStopped = "forwarded_permission.serving_stopped"

	// ForwardedAutoApproved is the serving node's terminal entry when its
	// recorded authority allowed a forwarded ask without asking anyone.
	// Details: requestId, source, requesterAgentName, requesterSessionId,
	// targetSessionId, requestPath, decidedBy.
	ForwardedAutoApproved = "forwarded_permission.auto_approved"

	// ForwardedAutoDenied is ForwardedAutoApproved's denying twin.
	ForwardedAutoDenied = "forwarded_permission.auto_denied"

	// ForwardedPrompted is written by the serving node when a forwarded ask
	// falls through recorded authority to its chain and terminal. Details:
	// the base details, plus floor when the child sent one.
	ForwardedPrompted = "forwarded_permission.prompted"

	// ForwardedApproved is the serving node's terminal entry for an escalated
	// forwarded ask that was allowed. Details: requestId, source,
	// requesterAgentName, requesterSessionId, targetSessionId, responsePath,
	// resolution (the wire state), denialReason, decidedBy.
	ForwardedApproved = "forwarded_permission.approved"

	// ForwardedDenied is ForwardedApproved's denying twin.
	ForwardedDenied = "forwarded_permission.denied"

	// ForwardedRequesterGone is courier's: the serving node stopped
	// working on a request because its child gave up or died, so nobody
	// was prompted for it and no response was written.
	ForwardedRequesterGone = "forwarded_permission.requester_gone"

	// ForwardedSessionRecorded is written when the operator widened a
	// forwarded grant to the whole serving session. Details: the base
	// details plus grants.
	ForwardedSessionRecorded = "forwarded_permission.session_recorded"

	// ForwardingWarning reports a recoverable mailbox problem (an invalid
	// request file, a wrong target). Details: message, error.
	ForwardingWarning = "permission_forwarding.warning"

	// ForwardingError reports a mailbox failure that lost or delayed work
	// (a response that could not be written). Details: message, error.
	ForwardingError = "permission_forwarding.error"

	// RequestWaiting is written when an ask is put to a chain and terminal,
	// before anything decides. Details: requestId, source, agentName, the
	// display facts (toolName, command, path, …).
	RequestWaiting = "permission_request.waiting"

	// RequestApproved is the terminal entry of an escalated ask that was
	// allowed, on the node where it was escalated. Details: as
	// RequestWaiting plus resolution, denialReason, decidedBy, and
	// sessionGrantWidth for session grants.
	RequestApproved = "permission_request.approved"

	// RequestDenied is RequestApproved's denying twin.
	RequestDenied = "permission_request.denied"

	// RequestBlocked is the terminal entry of an ask a rule denied at the
	// gate. Details: the display facts, resolution, decidedBy.
	RequestBlocked = "permission_request.blocked"

	// RequestSessionApproved is the terminal entry of an ask a session grant
	// allowed at the gate.
	RequestSessionApproved = "permission_request.session_approved"

	// RequestAutoApproved is the terminal entry of an ask allowed by yolo
	// mode.
	RequestAutoApproved = "permission_request.auto_approved"

	// RequestInfrastructureAutoAllowed is the terminal entry of a read of the
	// agent's own infrastructure files, which is always allowed.
	RequestInfrastructureAutoAllowed = "permission_request.infrastructure_auto_allowed"

	// RequestGateError is the terminal entry of an ask denied because
	// deciding it failed (fail closed). Details: the display facts, reason,
	// decidedBy {kind:"gate_error"}.
	RequestGateError = "permission_request.gate_error"

	// ChainResolved is written before any authorizer link runs, naming the
	// links in order, because a link that defers otherwise leaves no trace.
	// Details: requestId, links.
	ChainResolved = "authorizer_chain_resolved"

	// ChainDelegated is written by a relaying node, which runs no links of
	// its own. Details: requestId, links.
	ChainDelegated = "authorizer_chain_delegated"

	// ChainUnregisteredLink is written when a configured link is not
	// available and is skipped, failing safe. Details: requestId, name.
	ChainUnregisteredLink = "authorizer_chain_unregistered_link"

	// LinkVacant is written for a link loaded on a node that never consults
	// it (a relaying node). Details: requestId, name.
	LinkVacant = "authorizer_link_vacant"

	// LinkShadow records the verdict of a link running in shadow mode:
	// consulted and logged, never enforced, so an operator can judge a new
	// authorizer against real traffic first. courier's addition. Details:
	// requestId, name, verdict, reason, latencyMs, and as for LinkVerdict
	// capped/linkVerdict and failure/error.
	LinkShadow = "authorizer_link.shadow"

	// LinkVerdict records what one enforcing link answered on one ask, in
	// consultation order, so a deferring link leaves a trace too. courier's
	// addition. Details: requestId, name, verdict (allow, deny or defer: the
	// verdict that counted), reason (deny only, else null), latencyMs; with
	// capped:true and linkVerdict:"allow" when the delegation envelope
	// turned an allow into a defer; with failure and error when the link
	// could not judge and its failure policy gave the verdict.
	LinkVerdict = "authorizer_link.verdict"

	// LinkDisabled is written at startup for a configured link that could
	// not be loaded (a missing binary, a checksum mismatch): it is never
	// started, and every ask gets its failure verdict. courier's addition.
	// Details: name, path, error.
	LinkDisabled = "authorizer_link.disabled"
)

// Detail keys that readers join and classify entries by. Writers should use
// these names so the census in package audit finds them.
const (
	// KeyRequestID joins the entries of one ask across nodes: the forwarded
	// request adopts the child's id.
	KeyRequestID = "requestId"

	// KeyDecidedBy holds the provenance union of a terminal entry.
	KeyDecidedBy = "decidedBy"

	// KeyApproved holds the boolean outcome where an entry states it.
	KeyApproved = "approved"

	// KeyResolution holds pi's resolution (user_approved, policy_deny, …) or,
	// on forwarded_permission.approved/denied, the wire state.
	KeyResolution = "resolution"

	// KeyState holds the wire state of a response (approved,
	// approved_for_session, denied, denied_with_reason).
	KeyState = "state"
)
