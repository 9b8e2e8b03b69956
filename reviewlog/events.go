package reviewlog

// Event names. They are pi-permission-system's review-log catalogue, spelled
// exactly as pi spells them, so one log file can hold lines from pi nodes and
// courier nodes and one reader can census both (package audit). Events
// courier adds use the same dotted families.
//
// An event courier writes is documented on its entry type, which holds its
// keys: the type is the event's name with Entry after it. The events with no
// type are pi's alone: no courier code writes them, and they are here for
// the readers of pi's lines.
//
// "Terminal" means the entry records the final decision of an ask on the
// node that writes it, and carries decidedBy.
const (
	ForwardedRequestCreated   = "forwarded_permission.request_created"    // [ForwardedRequestCreatedEntry]
	ForwardedResponseReceived = "forwarded_permission.response_received"  // [ForwardedResponseReceivedEntry]
	ForwardedNoServingSession = "forwarded_permission.no_serving_session" // [ForwardedNoServingSessionEntry]
	ForwardedResponseTimedOut = "forwarded_permission.response_timed_out" // [ForwardedResponseTimedOutEntry]
	ForwardedSessionReloaded  = "forwarded_permission.session_reloaded"   // [ForwardedSessionReloadedEntry]
	ForwardedServingStarted   = "forwarded_permission.serving_started"    // [ForwardedServingStartedEntry]
	ForwardedServingStopped   = "forwarded_permission.serving_stopped"    // [ForwardedServingStoppedEntry]
	ForwardedAutoApproved     = "forwarded_permission.auto_approved"      // [ForwardedAutoApprovedEntry]
	ForwardedAutoDenied       = "forwarded_permission.auto_denied"        // [ForwardedAutoDeniedEntry]
	ForwardedPrompted         = "forwarded_permission.prompted"           // [ForwardedPromptedEntry]
	ForwardedApproved         = "forwarded_permission.approved"           // [ForwardedApprovedEntry]
	ForwardedDenied           = "forwarded_permission.denied"             // [ForwardedDeniedEntry]
	ForwardedRequesterGone    = "forwarded_permission.requester_gone"     // [ForwardedRequesterGoneEntry]
	ForwardedSessionRecorded  = "forwarded_permission.session_recorded"   // [ForwardedSessionRecordedEntry]

	ForwardingWarning = "permission_forwarding.warning" // [ForwardingWarningEntry]
	ForwardingError   = "permission_forwarding.error"   // [ForwardingErrorEntry]

	RequestApproved        = "permission_request.approved"         // [RequestApprovedEntry]
	RequestDenied          = "permission_request.denied"           // [RequestDeniedEntry]
	RequestSessionApproved = "permission_request.session_approved" // [RequestSessionApprovedEntry]

	ChainResolved  = "authorizer_chain_resolved"  // [ChainResolvedEntry]
	ChainDelegated = "authorizer_chain_delegated" // [ChainDelegatedEntry]
	LinkShadow     = "authorizer_link.shadow"     // [LinkShadowEntry]
	LinkVerdict    = "authorizer_link.verdict"    // [LinkVerdictEntry]
	LinkDisabled   = "authorizer_link.disabled"   // [LinkDisabledEntry]
)

// pi's events that courier does not write.
const (
	// ForwardedRelayStarted is written by a node that starts relaying its
	// asks to its own parent (multi-hop). Details: targetSessionId,
	// channel.
	ForwardedRelayStarted = "forwarded_permission.relay_started"

	// ForwardedRelayStopped ends what ForwardedRelayStarted began.
	ForwardedRelayStopped = "forwarded_permission.relay_stopped"

	// RequestWaiting is written when an ask is put to a chain and terminal,
	// before anything decides. Details: requestId, source, agentName, the
	// display facts (toolName, command, path, …).
	RequestWaiting = "permission_request.waiting"

	// RequestBlocked is the terminal entry of an ask a rule denied at the
	// gate. Details: the display facts, resolution, decidedBy.
	RequestBlocked = "permission_request.blocked"

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

	// ChainUnregisteredLink is written when a configured link is not
	// available and is skipped, failing safe. Details: requestId, name.
	ChainUnregisteredLink = "authorizer_chain_unregistered_link"

	// LinkVacant is written for a link loaded on a node that never consults
	// it (a relaying node). Details: requestId, name.
	LinkVacant = "authorizer_link_vacant"
)

// Detail keys that readers join and classify entries by (the census in
// package audit). The entry types write them under these names.
const (
	// KeyRequestID joins the entries of one ask across nodes: the forwarded
	// request adopts the child's id.
	KeyRequestID = "requestId"

	// KeyRequestSHA256 holds the digest of the request file's bytes
	// (wire.RequestDigest, the response binding's requestSha256) where
	// the writer knows it: with KeyRequestID it tells apart two asks that
	// used one id.
	KeyRequestSHA256 = "requestSha256"

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
