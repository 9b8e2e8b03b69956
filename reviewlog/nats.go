package reviewlog

import "encoding/json"

// The entries a broker's NATS bridge (package natsbridge) writes about the
// asks it carries between a JetStream engine and its own file inbox. They
// are courier's, in pi's forwarded_permission family; the bridged request
// itself is then served like any file request, and its serve entries join
// these by requestId. owner is the NATS identity that asked (the subject's
// owner token), which the request file no longer says: the file is the
// broker's own.
const (
	NATSRequestBridged    = "forwarded_permission.nats_request_bridged"    // [NATSRequestBridgedEntry]
	NATSRequestRefused    = "forwarded_permission.nats_request_refused"    // [NATSRequestRefusedEntry]
	NATSResponsePublished = "forwarded_permission.nats_response_published" // [NATSResponsePublishedEntry]
	NATSRequestWithdrawn  = "forwarded_permission.nats_request_withdrawn"  // [NATSRequestWithdrawnEntry]
)

// NATSRequestBridgedEntry ([NATSRequestBridged]) is written when a request
// that arrived over NATS is in the broker's inbox, byte for byte, before
// the engine is told it was taken.
//
// Keys: owner, requestId, requestSha256, subject.
type NATSRequestBridgedEntry struct {
	RequestID string
	// Owner is the asking identity's subject token.
	Owner string
	// Subject is the request's subject (courier.req.S.O.R).
	Subject string
	// RequestSHA256 is the digest of the request's bytes
	// (wire.RequestDigest), the one its answer is bound to.
	RequestSHA256 string
}

// NATSRequestRefusedEntry ([NATSRequestRefused]) is written when a
// message on the request subjects is not served: a subject or body that is
// not a request of this session's, a requester pid the broker cannot
// probe, an id another request holds. answered says whether an
// "unavailable" answer was published to the requester's response subject,
// so that it does not wait its timeout.
//
// Keys: answered, owner (when known), reason, requestId (when known),
// subject.
type NATSRequestRefusedEntry struct {
	Subject string
	// Owner and RequestID are written when the subject or body said them.
	Owner, RequestID string
	// Reason says why, for the operator.
	Reason string
	// Answered: an unavailable answer was published.
	Answered bool
}

// NATSResponsePublishedEntry ([NATSResponsePublished]) is written when the
// response file of a bridged request was published to its response
// subject and the engine confirmed it kept it; the file is removed after.
//
// Keys: owner, requestId, subject; with AnsweredEarlier also
// answeredEarlier (true), decidedBy, denialReason and resolution.
type NATSResponsePublishedEntry struct {
	RequestID string
	Owner     string
	// Subject is the response subject (courier.resp.S.O.R).
	Subject string
	// AnsweredEarlier, when set, says that the answer was written by an
	// earlier run of the broker, which was stopped before it published
	// it and perhaps before it logged the decision, and what the answer
	// says was decided.
	AnsweredEarlier *EarlierAnswer
}

// EarlierAnswer is what an answer left by an earlier run says was
// decided ([NATSResponsePublishedEntry]).
type EarlierAnswer struct {
	// Resolution is the response's wire state (approved, denied, …).
	Resolution string
	// DenialReason is the response's reason; "" writes null.
	DenialReason string
	DecidedBy    json.Marshaler
}

// NATSRequestWithdrawnEntry ([NATSRequestWithdrawn]) is written when the
// requester said it gave up (a gone message) and the bridge removed its
// request from the inbox, or refused it before it was bridged; the serve
// loop then withdraws the ask as for a file child that gave up.
//
// Keys: owner, requestId, subject.
type NATSRequestWithdrawnEntry struct {
	RequestID string
	Owner     string
	// Subject is the gone subject (courier.gone.S.O.R).
	Subject string
}

func (NATSRequestBridgedEntry) Event() string    { return NATSRequestBridged }
func (NATSRequestRefusedEntry) Event() string    { return NATSRequestRefused }
func (NATSResponsePublishedEntry) Event() string { return NATSResponsePublished }
func (NATSRequestWithdrawnEntry) Event() string  { return NATSRequestWithdrawn }

func (e NATSRequestBridgedEntry) appendDetails(d details) {
	d.str("owner", e.Owner)
	d.str(KeyRequestID, e.RequestID)
	d.str(KeyRequestSHA256, e.RequestSHA256)
	d.str("subject", e.Subject)
}

func (e NATSRequestRefusedEntry) appendDetails(d details) {
	d.boolean("answered", e.Answered)
	d.strIfSet("owner", e.Owner)
	d.str("reason", e.Reason)
	d.strIfSet(KeyRequestID, e.RequestID)
	d.str("subject", e.Subject)
}

func (e NATSResponsePublishedEntry) appendDetails(d details) {
	a := e.AnsweredEarlier
	if a != nil {
		d.boolean("answeredEarlier", true)
		d.decidedBy(a.DecidedBy)
		d.strOrNull("denialReason", a.DenialReason)
	}
	d.str("owner", e.Owner)
	d.str(KeyRequestID, e.RequestID)
	if a != nil {
		d.str(KeyResolution, a.Resolution)
	}
	d.str("subject", e.Subject)
}

func (e NATSRequestWithdrawnEntry) appendDetails(d details) {
	d.str("owner", e.Owner)
	d.str(KeyRequestID, e.RequestID)
	d.str("subject", e.Subject)
}
