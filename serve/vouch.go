package serve

import (
	"errors"
	"fmt"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// errNothingToVouch: an answer "this subagent only" with no grant the
// broker could keep.
var errNothingToVouch = errors.New("nothing to keep for this subagent")

// vouch keeps the grants of an answer "yes, for this subagent only"
// (approved_for_session) in the isolation mode, where the child cannot
// keep them itself: its own store would be writable by the subagent it
// answers for. The broker records them into the requester's vouched
// journal (grants.OpenVouched: the request file's owner uid, the
// requester's session) before the response is written, so that the
// child's next ask finds them, and nobody but the broker's user could
// have put them there.
//
// What is recorded is what forward.LocalGrants.Record records on the
// child's side in the same-uid mode, at the width the answer chose
// (proven when it said nothing), but only the child's suggestions that
// pass the same admission as a whole-session grant (rules.AdmitGrants):
// the broker is the boundary here, and a hostile child's `bash *` below
// the fold is not what the operator answered.
//
// It returns d when its grants are kept (or the journal held them
// already), and otherwise d approved once, with the failure logged: the
// ask is never lost, and no answer claims a grant that was not kept.
func (b *Broker) vouch(req wire.Request, path string, d decision.Decision, f from) decision.Decision {
	once := d
	once.State, once.SessionGrantWidth = decision.StateApproved, ""
	if f.uid < 0 {
		// Not reached: every request of the isolation mode has an owner.
		b.vouchFailed(req, path, "", f, errors.New("the requester's uid is unknown"))
		return once
	}
	if req.SessionApproval == nil || len(req.SessionApproval.Grants) == 0 {
		b.vouchFailed(req, path, "", f, fmt.Errorf("%w: the request suggests no grant", errNothingToVouch))
		return once
	}
	admitted := b.admitSuggested(&req, "not vouched for this subagent")
	if len(admitted) == 0 {
		b.vouchFailed(req, path, "", f, fmt.Errorf("%w: none of the grants the request suggests was admitted", errNothingToVouch))
		return once
	}
	width, gs := sessionGrants(d, admitted)
	journal, err := grants.OpenVouched(b.Layout, f.uid, req.RequesterSessionID)
	if err != nil {
		b.vouchFailed(req, path, "", f, err)
		return once
	}
	if _, err := journal.Vouch(width, gs, grants.AskedFor(req, d, b.now())); err != nil {
		b.vouchFailed(req, path, journal.Path(), f, err)
		return once
	}
	return d
}

// vouchFailed logs and reports why an answer "this subagent only" is
// approved once instead: an error when the journal failed, a warning when
// there was nothing admissible to keep.
func (b *Broker) vouchFailed(req wire.Request, path, journal string, f from, err error) {
	const msg = "Failed to vouch for this subagent's grants; answering approved once"
	if journal != "" || !errors.Is(err, errNothingToVouch) {
		b.log(reviewlog.ForwardingErrorEntry{RequestID: reviewlog.Str(req.ID), RequestPath: path, Journal: journal, Error: err, Message: msg})
	} else {
		p := f.parties(parties(&req))
		b.log(reviewlog.ForwardingWarningEntry{RequestID: reviewlog.Str(req.ID), Parties: &p, RequestPath: path, Error: err, Message: msg})
	}
	b.report(fmt.Errorf("request %s (uid %d, session %q): the grants for this subagent were not kept, so it is approved once: %w", req.ID, f.uid, req.RequesterSessionID, err))
}
