package serve

import (
	"fmt"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// unwrittenAnswer is a decision whose response could not be written, with
// the digest of the request bytes it was made on: the retry binds it to
// what was decided, not to whatever the file holds by then.
type unwrittenAnswer struct {
	d      decision.Decision
	digest string
	// uid owned the request file decided (NoUID in the same-uid mode):
	// the same bytes from another member of the ask group are another
	// requester's.
	uid int
}

// maxAnswered bounds the ids of answered requests remembered (in answered,
// answeredOrder and answeredDigest), about 170 bytes each, the id
// included. They are otherwise kept for the forwarding timeout, and a
// flood answered at 15,000 a second for that long would be a gigabyte.
// Past the bound the oldest is forgotten before its time, and a request
// under a forgotten id is then looked for on disk, as by a broker that
// started with too many answers there to list (forgotten).
const maxAnswered = 1 << 16

// forgottenBits is the size of each of the two generations of the
// filter of ids forgotten early (agingbloom): 2 MiB each, taken only
// once an id is. A request under an id never forgotten is looked for on
// disk for nothing about once in 37,000 with 262,144 ids in each
// generation, once in 31 with 1.86 million (an answer rate of 3,000 a
// second kept up for a whole window of the default forwarding timeout),
// and nearly always past about 10 million (15,000 a second): as before
// the filter, when every request was looked for once any id had been
// forgotten, a failed lookup under responses/' lock each.
const forgottenBits = 1 << 24

// forgetOldestAnswered forgets the oldest id answered, now, before the
// forwarding timeout: for forgetWindow from then a request delivered
// again under it is known answered only by its answer on disk
// (mayBeAnsweredOnDisk), as after a restart. b.mu is held.
func (b *Broker) forgetOldestAnswered(now time.Time) {
	b.forgotten.Add(b.answeredOrder[0].id, now)
	b.forgetAnswered(b.answeredOrder[0])
	b.answeredOrder[0] = answeredAt{}
	b.answeredOrder = b.answeredOrder[1:]
}

// forgetAnswered forgets a, one entry of answeredOrder, unless its id was
// answered again since (a later entry is its). b.mu is held.
func (b *Broker) forgetAnswered(a answeredAt) {
	if b.answered[a.id].Equal(a.at) {
		delete(b.answered, a.id)
		delete(b.answeredDigest, a.id)
	}
}

// answeredAt is one entry of Broker.answeredOrder.
type answeredAt struct {
	id string
	at time.Time
}

// finish applies the grant scope, writes the response atomically, bound to
// the request bytes (digest) it decides, and only then removes the request.
// ruled says the recorded authority decided: its review entry
// (auto_approved, auto_denied) is logged once the response is written (or
// could not be), before finish's own entry.
//
// In the isolation mode an answer "yes, for this subagent only" is
// vouched for first (vouch): its grants are in the requester's vouched
// journal before the response exists, or the answer is approved once.
//
// It returns answered, or retry when the response could not be written
// (the decision is kept and written on the next delivery, not made again)
// or the request could not be removed.
func (b *Broker) finish(req wire.Request, path string, d decision.Decision, digest string, ruled bool, f from) outcome {
	defer b.settle(req.ID)
	if d.State == decision.StateApprovedForServingSession {
		b.recordWholeSession(req, path, d, f)
	}
	if d.State == decision.StateApprovedForSession && b.Layout.Isolated() {
		d = b.vouch(req, path, d, f)
	}
	var asked reviewlog.Asked
	if b.Log != nil { // splitting a bash line again is for the log alone
		asked = askedOf(&req)
	}
	resp := d.Response(b.Session, b.now().UnixMilli()).Bind(req.ID, digest)
	respPath, _ := b.Layout.ResponsePath(b.Session, req.ID)
	data, err := wire.EncodeResponse(resp)
	if b.beforeResponse != nil {
		b.beforeResponse(&req, d)
	}
	var over bool
	if err == nil {
		over, err = b.Layout.WriteResponseOver(b.Session, req.ID, data)
	}
	if err == nil && over && !b.mayBeAnsweredOnDisk(req.ID) && !b.answeredThisRun(req.ID) {
		// Only once it is replaced: a write that failed answered over
		// nothing, and is retried.
		b.answeredOver(&req, path, respPath)
	}
	if err != nil {
		// Keep the request; the next attempt rewrites this decision
		// instead of asking again.
		b.mu.Lock()
		b.unwritten[req.ID] = unwrittenAnswer{d: d, digest: digest, uid: f.uid}
		b.mu.Unlock()
		b.logRuled(ruled, req, path, digest, d, asked, f)
		b.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), Message: "Failed to write forwarded permission response", ResponsePath: respPath, Error: err})
		b.report(fmt.Errorf("answering %s: %w", req.ID, err))
		return retry
	}
	b.mu.Lock()
	delete(b.unwritten, req.ID)
	at := b.now()
	b.answered[req.ID] = at
	b.answeredOrder = append(b.answeredOrder, answeredAt{req.ID, at})
	if len(b.answeredOrder) > b.answeredMax {
		b.forgetOldestAnswered(at)
	}
	b.mu.Unlock()
	if t, ok := b.Terminal.(Tally); ok {
		t.Counted(d.DecidedBy)
	}
	removed := b.remove(path)
	b.logRuled(ruled, req, path, digest, d, asked, f)
	e := reviewlog.ForwardedApprovedEntry{
		RequestID: req.ID, Parties: f.parties(partiesOf(&req, digest)), ResponsePath: respPath,
		Resolution: string(d.State), DenialReason: d.DenialReason, DecidedBy: d.DecidedBy, Terminal: d.Terminal,
		Asked: asked,
	}
	if d.Approved() {
		b.log(e)
	} else {
		b.log(reviewlog.ForwardedDeniedEntry(e))
	}
	return afterRemoval(removed, answered)
}

// logRuled writes the recorded authority's review entry, when it decided.
func (b *Broker) logRuled(ruled bool, req wire.Request, path, digest string, d decision.Decision, asked reviewlog.Asked, f from) {
	if !ruled {
		return
	}
	e := reviewlog.ForwardedAutoApprovedEntry{RequestID: req.ID, Parties: f.parties(partiesOf(&req, digest)), RequestPath: path, DecidedBy: d.DecidedBy, Asked: asked}
	if d.Approved() {
		b.log(e)
	} else {
		b.log(reviewlog.ForwardedAutoDeniedEntry(e))
	}
}

// recordWholeSession records the grants the operator chose (d.Grants), or
// else the request's suggestion, as admitted again now (grantsToRecord),
// into the broker's session rules and journals them, so that a restart
// for the same session id keeps them (docs/decisions/0005-serve-loop.md).
func (b *Broker) recordWholeSession(req wire.Request, path string, d decision.Decision, f from) {
	chosen := b.grantsToRecord(&req, d)
	if len(chosen) == 0 {
		return
	}
	width, gs := sessionGrants(d, chosen)
	defer b.Journal.Recording()() // a reload waits until the grant is journaled
	sessions := b.Policy.Sessions()
	recorded, err := sessions.Record(width, gs...)
	if err != nil {
		b.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), Message: "Failed to record session grants", Error: err})
		b.report(err)
		return
	}
	if b.Journal != nil {
		if err := b.Journal.Save(sessions, grants.AskedFor(req, d, b.now())); err != nil {
			b.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), Message: "Failed to journal session grants", Error: err})
			b.report(err)
		}
	}
	b.log(reviewlog.ForwardedSessionRecordedEntry{RequestID: req.ID, Parties: f.parties(parties(&req)), RequestPath: path, Grants: loggedGrants(recorded)})
}

// admittedGrants are the child's suggested grants that "yes, for the
// whole session" may offer for req (rules.Policy.AdmitGrants); the ones
// dropped are logged, as one entry (logDropped).
func (b *Broker) admittedGrants(req *wire.Request) []wire.SuggestedGrant {
	if req.SessionApproval == nil || len(req.SessionApproval.Grants) == 0 {
		return nil
	}
	return b.admitSuggested(req, "not offered for the whole session")
}

// admitSuggested is req's suggested grants (req.SessionApproval is set)
// that pass admission for what it asked (rules.Policy.AdmitGrants); the
// ones dropped are logged, as one entry saying what they are not
// (logDropped).
func (b *Broker) admitSuggested(req *wire.Request, not string) []wire.SuggestedGrant {
	suggested := req.SessionApproval.Grants
	admitted, dropped := b.Policy.AdmitGrants(admissionQuery(req), suggested)
	b.logDropped(req, not, len(suggested)-len(admitted), dropped)
	return admitted
}

// sessionGrants is the width an answer approved for a session chose
// (proven when it said nothing) and chosen as the rules record them: what
// a whole-session answer records here and a subagent-scope one vouches
// for (vouch), as forward.LocalGrants.Record does on the child's side.
func sessionGrants(d decision.Decision, chosen []wire.SuggestedGrant) (rules.Width, []rules.SessionGrant) {
	width := rules.WidthProven
	if d.SessionGrantWidth == wire.GrantFamily {
		width = rules.WidthFamily
	}
	gs := make([]rules.SessionGrant, len(chosen))
	for i, g := range chosen {
		gs[i] = rules.SessionGrant{Surface: g.Surface, Pattern: g.Pattern}
	}
	return width, gs
}

// grantsToRecord is what a whole-session answer records, admitted again
// at answer time (the policy may have changed since the ask was shown):
// the grants the operator typed at the prompt (d.Grants), which need only
// cover a value that was asked, since the operator chose their width and
// saw them; or else the child's suggestions, which must pass admission as
// they did for the prompt. Nothing else is ever recorded; the grants
// dropped are logged, as one entry.
func (b *Broker) grantsToRecord(req *wire.Request, d decision.Decision) []wire.SuggestedGrant {
	if d.Grants != nil {
		admitted, dropped := b.Policy.AdmitOperatorGrants(admissionQuery(req), d.Grants)
		b.logDropped(req, "not recorded for the whole session", len(d.Grants)-len(admitted), dropped)
		return admitted
	}
	if req.SessionApproval == nil || len(req.SessionApproval.Grants) == 0 {
		return nil
	}
	return b.admitSuggested(req, "not recorded for the whole session")
}

// admissionQuery is what req asked, for grant admission: its access
// facts, or for a request without them (a pi 20.x child) its display
// surface and value, which are what the operator was shown.
func admissionQuery(req *wire.Request) rules.Query {
	if req.AccessIntent != nil {
		return rules.QueryFromIntent(req.AccessIntent)
	}
	if req.Surface == "" || req.Value == "" {
		return rules.Query{}
	}
	return rules.Query{Surface: req.Surface, MatchValues: []string{req.Value}}
}
