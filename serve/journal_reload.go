package serve

import (
	"fmt"

	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
)

// reloadJournal takes in the grant journal when someone else changed it
// since the broker last read or wrote it: a revoke takes effect on the
// next tick. Only removals are applied; a grant that appeared in the file
// is refused and logged with its facts (see grants.Journal.Reload). It
// never waits (see grants.Journal.Reload): the serve loop calls it, and
// the heartbeat must not be held up. A journal that cannot be read is
// logged, once per version of the file, and the grants in memory are
// kept whole.
func (b *Broker) reloadJournal() {
	if b.Journal == nil {
		return
	}
	sessions := b.Policy.Sessions()
	change, err := b.Journal.Reload(sessions)
	if err != nil {
		b.log(reviewlog.ForwardingErrorEntry{
			Message: "Failed to reload the session grants; the grants in memory are kept",
			Journal: b.Journal.Path(), Error: err,
		})
		b.report(fmt.Errorf("%w (the %d session grants in memory are kept)", err, sessions.Len()))
		return
	}
	if change.Resumed {
		b.log(reviewlog.ForwardingWarningEntry{
			Message: "The refused grant journal was removed; whole-session grants are journaled again from the next one",
		})
		b.report(fmt.Errorf("the refused grant journal %s was removed: the %d session grants in memory are kept, and journaled with the next grant", b.Journal.Path(), sessions.Len()))
		return
	}
	if !change.Reloaded {
		return
	}
	for _, e := range change.Refused {
		// Nobody adds to a serving broker's journal but the broker: a
		// grant that appeared there was planted. Each is said in full.
		b.log(reviewlog.ForwardingWarningEntry{
			Message: fmt.Sprintf("Refused a grant that appeared in the session grant journal %s while the broker served (only the broker records there; revoking only removes): %s", b.Journal.Path(), e),
		})
		b.report(fmt.Errorf("grant journal %s: refused a grant that appeared while the broker served, not taken in: %s", b.Journal.Path(), e))
	}
	if len(change.Removed) == 0 && len(change.Added) == 0 && len(change.Refused) > 0 {
		return
	}
	n := sessions.Len()
	b.log(reviewlog.ForwardedSessionReloadedEntry{
		SessionID: b.Session, Journal: b.Journal.Path(), Grants: n,
		Revoked: loggedGrants(nonNil(change.Removed)), Added: loggedGrants(nonNil(change.Added)),
	})
	// Not a failure, but the operator's eye belongs on grants that
	// changed under the broker.
	b.report(fmt.Errorf("session grants reloaded from %s: %d revoked, %d added, %d now", b.Journal.Path(), len(change.Removed), len(change.Added), n))
}

// nonNil logs no grants as [], not null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// loggedGrants is gs as review entries record them; nil stays nil.
func loggedGrants(gs []rules.SessionGrant) []reviewlog.SessionGrant {
	if gs == nil {
		return nil
	}
	out := make([]reviewlog.SessionGrant, len(gs))
	for i, g := range gs {
		out[i] = reviewlog.SessionGrant{Surface: g.Surface, Pattern: g.Pattern}
	}
	return out
}
