package grants

import (
	"fmt"

	"github.com/seed6639df8c/courier/rules"
)

// Change is what a Reload did to the grants in memory.
type Change struct {
	// Reloaded is false when the file was the one this Journal last read
	// or wrote (nothing was read), or when the Journal was busy.
	Reloaded bool
	// Removed are the grants the journal no longer holds; Added those it
	// holds and memory did not, each in its order.
	Removed, Added []rules.SessionGrant
}

// Recording brackets a caller's Record into the session rules this
// Journal loads and its Save of them, so that a Reload, which replaces
// them, cannot drop a grant recorded but not yet saved:
//
//	defer journal.Recording()()
//
// A nil Journal brackets nothing.
func (j *Journal) Recording() (done func()) {
	if j == nil {
		return func() {}
	}
	j.recording.Lock()
	return j.recording.Unlock
}

// Reload replaces the grants of into with the journal's when the file
// changed since this Journal last read or wrote it (someone revoked a
// grant, or another process recorded one). It never waits: while a
// caller is Recording, or this process is reading or writing the file, it
// does nothing and a later call takes the change in.
//
// A journal that is unsafe or malformed is an error naming the file, and
// into keeps its grants: the file is never half-applied. The same file is
// reported once; the next change to it is read again.
func (j *Journal) Reload(into *rules.SessionRules) (Change, error) {
	if !j.recording.TryLock() {
		return Change{}, nil
	}
	defer j.recording.Unlock()
	if !j.mu.TryLock() {
		return Change{}, nil
	}
	defer j.mu.Unlock()
	now, err := statJournal(j.path)
	if err != nil {
		if j.statFailed {
			return Change{}, nil
		}
		j.statFailed = true
		return Change{}, fmt.Errorf("grant journal: %w", err)
	}
	j.statFailed = false
	if j.synced && now.same(j.seen) || j.failed.info != nil && now.same(j.failed) {
		return Change{}, nil
	}
	snap, st, err := j.read()
	if err == nil {
		before := into.Grants()
		if err = into.Restore(snap); err == nil {
			j.synced, j.seen, j.base, j.failed = true, st, set(snap.Grants), stamp{}
			return Change{Reloaded: true, Removed: minus(before, snap.Grants), Added: minus(snap.Grants, before)}, nil
		}
		err = fmt.Errorf("grant journal %s: %w", j.path, err)
	}
	j.failed = now
	return Change{}, err
}

// minus returns the grants of a that b lacks, in a's order.
func minus(a, b []rules.SessionGrant) []rules.SessionGrant {
	in := set(b)
	var out []rules.SessionGrant
	for _, g := range a {
		if _, ok := in[g]; !ok {
			out = append(out, g)
		}
	}
	return out
}
