package reviewlog

import "encoding/json"

// The entries a serving node (the broker, package serve) writes about its
// mailbox and the requests it answers. Each type's comment is its event's
// documentation; the keys are listed as the line holds them.

// SessionGrant is a session grant (rules.SessionGrant) as an entry
// records it: {"pattern": …, "surface": …}. Its tags name the keys for the
// generic path, which writes a grant that is not valid UTF-8.
type SessionGrant struct {
	Surface string `json:"surface"`
	Pattern string `json:"pattern"`
}

// Parties says who forwarded a request and to which session, as every
// entry the serving node writes about a request records it, beside
// requestId: requesterAgentName, requesterSessionId and targetSessionId,
// with "source":"primary", a constant of pi's line; and, when known,
// requestSha256, the request's digest.
type Parties struct {
	RequesterAgentName string
	RequesterSessionID string
	// TargetSessionID is the session asked: the serving one.
	TargetSessionID string
	// RequestSHA256 is the digest of the request file's bytes
	// (wire.RequestDigest), written as requestSha256 when set: with the
	// requestId it names one ask even when an id is used twice (across a
	// broker's restart), which the census joins by.
	RequestSHA256 string
	// RequesterUID is the request file's owner in the isolation mode
	// (docs/decisions/0024): the requester the transport vouches for,
	// written as requesterUid. nil, the same-uid mode where the owner
	// is always the broker's own user, writes no key.
	RequesterUID *int
	// AgentTrust is how far the requester's agent name was believed for
	// its agent overrides (rules.AgentTrust: claimed, vouched,
	// not-vouched), written as agentTrust by the entries that record a
	// resolution; "" (no agent overrides concerned) writes no key.
	AgentTrust string
}

// source is the "source" value of the serving node's entries about a
// request.
const source = "primary"

// ForwardedServingStartedEntry ([ForwardedServingStarted]) is written when
// a node starts serving a mailbox. Cross-node diagnosis compares its
// sessionId with the targetSessionId of a child's
// [ForwardedRequestCreatedEntry].
//
// Keys: sessionId.
type ForwardedServingStartedEntry struct {
	SessionID string
}

// ForwardedServingStoppedEntry ([ForwardedServingStopped]) is written when
// a node stops serving.
//
// Keys: sessionId.
type ForwardedServingStoppedEntry struct {
	SessionID string
}

// ForwardedAutoApprovedEntry ([ForwardedAutoApproved]) is the serving
// node's terminal entry when its recorded authority (the rules and the
// session grants) allowed a forwarded ask without asking anyone.
//
// Keys: agentTrust (when set), decidedBy, requestId, requestPath,
// requestSha256 (when known), requesterAgentName, requesterCwd,
// requesterSessionId, requesterUid (isolation mode), source, surface,
// targetSessionId, units, value (the last four as [Asked] says).
type ForwardedAutoApprovedEntry struct {
	RequestID string
	Parties   Parties
	// RequestPath is the request file.
	RequestPath string
	// DecidedBy is the rule or grant that decided (a provenance.Source).
	DecidedBy json.Marshaler
	// Asked is what the request asked.
	Asked Asked
}

// ForwardedAutoDeniedEntry ([ForwardedAutoDenied]) is
// [ForwardedAutoApprovedEntry]'s denying twin: a rule denied the ask.
type ForwardedAutoDeniedEntry ForwardedAutoApprovedEntry

// ForwardedPromptedEntry ([ForwardedPrompted]) is written by the serving
// node when a forwarded ask falls through its recorded authority to the
// authorizer chain and the terminal, before either runs.
//
// Keys: agentTrust (when set), floor (only when the ask has one),
// requestId, requestPath, requestSha256 (when known), requesterAgentName,
// requesterCwd, requesterSessionId, requesterUid (isolation mode), source,
// surface, targetSessionId, units, value (the four of [Asked] as it says).
type ForwardedPromptedEntry struct {
	RequestID   string
	Parties     Parties
	RequestPath string
	// Floor is the floor that kept the ask an ask (docs/GLOSSARY.md); ""
	// writes no floor key.
	Floor string
	// Asked is what the request asked.
	Asked Asked
}

// ForwardedApprovedEntry ([ForwardedApproved]) is the serving node's
// terminal entry for a forwarded ask that was allowed, written once the
// response is. An ask the recorded authority decided has it too, after its
// [ForwardedAutoApprovedEntry].
//
// Keys: agentTrust (when set), approved (true), decidedBy, denialReason,
// requestId, requestSha256 (when known), requesterAgentName, requesterCwd,
// requesterSessionId, requesterUid (isolation mode), resolution,
// responsePath, source, surface,
// targetSessionId, terminal (when a terminal answered), units, value (the
// four of [Asked] as it says).
type ForwardedApprovedEntry struct {
	RequestID string
	Parties   Parties
	// ResponsePath is the response file.
	ResponsePath string
	// Resolution is the wire state of the response (approved, denied, …).
	Resolution string
	// DenialReason is the response's reason; "" writes null.
	DenialReason string
	DecidedBy    json.Marshaler
	// Terminal is the broker terminal that answered ("tty" for the
	// operator's prompt), "" when none did. courier's own fact: the
	// decidedBy beside it is seed 000's union only, where the tty
	// prompt is a dialog.
	Terminal string
	// Asked is what the request asked.
	Asked Asked
}

// ForwardedDeniedEntry ([ForwardedDenied]) is [ForwardedApprovedEntry]'s
// denying twin: its approved is false.
type ForwardedDeniedEntry ForwardedApprovedEntry

// ForwardedRequesterGoneEntry ([ForwardedRequesterGone]) is courier's: the
// serving node stopped working on a request because its child gave up or
// died, so nobody was prompted for it and no response was written.
//
// Keys: reason, requestId, requestPath.
type ForwardedRequesterGoneEntry struct {
	RequestID   string
	RequestPath string
	// Reason says how the requester was found gone.
	Reason string
}

// ForwardedSessionRecordedEntry ([ForwardedSessionRecorded]) is written
// when the operator widened a forwarded grant to the whole serving
// session, once the grants are recorded.
//
// Keys: grants, requestId, requestPath, requestSha256 (when known),
// requesterAgentName, requesterSessionId, requesterUid (isolation mode),
// source, targetSessionId.
type ForwardedSessionRecordedEntry struct {
	RequestID   string
	Parties     Parties
	RequestPath string
	// Grants are the grants recorded, those the session rules held
	// already left out; nil writes null.
	Grants []SessionGrant
}

// ForwardedSessionReloadedEntry ([ForwardedSessionReloaded]) is written by
// a broker that took in its grant journal after someone else changed it
// (broker grants revoke, an edit).
//
// Keys: added, grants, journal, revoked, sessionId.
type ForwardedSessionReloadedEntry struct {
	SessionID string
	// Journal is the journal file.
	Journal string
	// Grants is how many session grants there are now.
	Grants int
	// Revoked and Added are what changed; nil writes null, so a caller
	// passes an empty list for none.
	Revoked, Added []SessionGrant
}

func (ForwardedServingStartedEntry) Event() string  { return ForwardedServingStarted }
func (ForwardedServingStoppedEntry) Event() string  { return ForwardedServingStopped }
func (ForwardedAutoApprovedEntry) Event() string    { return ForwardedAutoApproved }
func (ForwardedAutoDeniedEntry) Event() string      { return ForwardedAutoDenied }
func (ForwardedPromptedEntry) Event() string        { return ForwardedPrompted }
func (ForwardedApprovedEntry) Event() string        { return ForwardedApproved }
func (ForwardedDeniedEntry) Event() string          { return ForwardedDenied }
func (ForwardedRequesterGoneEntry) Event() string   { return ForwardedRequesterGone }
func (ForwardedSessionRecordedEntry) Event() string { return ForwardedSessionRecorded }
func (ForwardedSessionReloadedEntry) Event() string { return ForwardedSessionReloaded }

func (e ForwardedServingStartedEntry) appendDetails(d details) { d.str("sessionId", e.SessionID) }
func (e ForwardedServingStoppedEntry) appendDetails(d details) { d.str("sessionId", e.SessionID) }

func (e ForwardedAutoApprovedEntry) appendDetails(d details) {
	d.strIfSet(KeyAgentTrust, e.Parties.AgentTrust)
	d.decidedBy(e.DecidedBy)
	d.servedAsk(e.RequestID, e.RequestPath, e.Parties, e.Asked)
}

func (e ForwardedAutoDeniedEntry) appendDetails(d details) {
	ForwardedAutoApprovedEntry(e).appendDetails(d)
}

func (e ForwardedPromptedEntry) appendDetails(d details) {
	d.strIfSet(KeyAgentTrust, e.Parties.AgentTrust)
	d.strIfSet("floor", e.Floor)
	d.servedAsk(e.RequestID, e.RequestPath, e.Parties, e.Asked)
}

func (e ForwardedApprovedEntry) appendDetails(d details) { e.appendAnswer(d, true) }
func (e ForwardedDeniedEntry) appendDetails(d details) {
	ForwardedApprovedEntry(e).appendAnswer(d, false)
}

func (e ForwardedApprovedEntry) appendAnswer(d details, approved bool) {
	d.strIfSet(KeyAgentTrust, e.Parties.AgentTrust)
	d.boolean(KeyApproved, approved)
	d.decidedBy(e.DecidedBy)
	d.strOrNull("denialReason", e.DenialReason)
	d.str(KeyRequestID, e.RequestID)
	d.strIfSet(KeyRequestSHA256, e.Parties.RequestSHA256)
	d.str(KeyRequesterAgentName, e.Parties.RequesterAgentName)
	d.strIfSet(KeyRequesterCwd, e.Asked.Cwd)
	d.str("requesterSessionId", e.Parties.RequesterSessionID)
	d.uid(KeyRequesterUID, e.Parties.RequesterUID)
	d.str(KeyResolution, e.Resolution)
	d.str("responsePath", e.ResponsePath)
	d.str("source", source)
	d.strIfSet(KeySurface, e.Asked.Surface)
	d.str("targetSessionId", e.Parties.TargetSessionID)
	d.strIfSet("terminal", e.Terminal)
	d.askedTail(e.Asked)
}

func (e ForwardedRequesterGoneEntry) appendDetails(d details) {
	d.str("reason", e.Reason)
	d.str(KeyRequestID, e.RequestID)
	d.str("requestPath", e.RequestPath)
}

func (e ForwardedSessionRecordedEntry) appendDetails(d details) {
	d.grants("grants", e.Grants)
	d.servedRequest(e.RequestID, e.RequestPath, e.Parties)
}

func (e ForwardedSessionReloadedEntry) appendDetails(d details) {
	d.grants("added", e.Added)
	d.integer("grants", e.Grants)
	d.str("journal", e.Journal)
	d.grants("revoked", e.Revoked)
	d.str("sessionId", e.SessionID)
}

// servedRequest appends the keys every serving-side entry about a request
// ends with: requestId, requestPath, requestSha256 (when known),
// requesterAgentName, requesterSessionId, requesterUid (isolation mode),
// source and targetSessionId.
func (d details) servedRequest(id, path string, p Parties) {
	d.str(KeyRequestID, id)
	d.str("requestPath", path)
	d.strIfSet(KeyRequestSHA256, p.RequestSHA256)
	d.str("requesterAgentName", p.RequesterAgentName)
	d.str("requesterSessionId", p.RequesterSessionID)
	d.uid(KeyRequesterUID, p.RequesterUID)
	d.str("source", source)
	d.str("targetSessionId", p.TargetSessionID)
}

// KeyRequesterUID is the key of Parties.RequesterUID, KeyAgentTrust of
// Parties.AgentTrust.
const (
	KeyRequesterUID = "requesterUid"
	KeyAgentTrust   = "agentTrust"
)

// uid appends *n, and nothing for a nil n.
func (d details) uid(key string, n *int) {
	if n != nil {
		d.integer(key, *n)
	}
}
