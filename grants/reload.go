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
	// Resumed says the file Load refused is gone: the grants in memory
	// were kept, and the next Save journals them again.
	Resumed bool
	// Refused are the grants a broker's journal gained while the broker
	// ran, with what the file says they were given for: none was taken in
	// (see Reload), and the next Save drops them from the file.
	Refused []Entry
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

// Reload takes in the journal when the file changed since this Journal
// last read or wrote it. A child's journal (several child processes of
// one session record into it) replaces the grants of into with the
// file's. A broker's journal has one writer, the broker itself: `broker
// grants revoke` only removes, so a grant that appears in the file while
// the broker runs was planted; Reload applies the removals only and
// returns the new grants as Change.Refused, never taking them in. It never waits: while a
// caller is Recording, or this process is reading or writing the file, it
// does nothing and a later call takes the change in.
//
// A journal that cannot be taken in is an error naming the file, and into
// keeps its grants: the file is never half-applied. The same file is
// reported once; the next change to it is read again. When the file Load
// refused is removed, into keeps its grants and journaling resumes
// (Change.Resumed).
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
	if j.resumeIfGone(now) {
		return Change{Resumed: true}, nil
	}
	if j.synced && now.same(j.seen) || j.failed.info != nil && now.same(j.failed) {
		return Change{}, nil
	}
	entries, st, err := j.read()
	if err == nil && j.side == Broker {
		before := into.Grants()
		onDisk := set(grantsOf(entries))
		var kept []rules.SessionGrant
		for _, g := range before {
			if _, ok := onDisk[g]; ok {
				kept = append(kept, g)
			}
		}
		var refused []Entry
		have := set(before)
		for _, e := range entries {
			if _, ok := have[e.Grant]; !ok {
				refused = append(refused, e)
			}
		}
		if err = into.Restore(snapshot(kept)); err == nil {
			j.take(entries, st)
			// base is what this broker holds: a refused grant is neither
			// revoked nor new, and Save leaves it out.
			j.base = set(kept)
			return Change{Reloaded: true, Removed: minus(before, kept), Refused: refused}, nil
		}
		err = j.refuse(err)
	} else if err == nil {
		before := into.Grants()
		after := grantsOf(entries)
		if err = into.Restore(snapshot(after)); err == nil {
			j.take(entries, st)
			return Change{Reloaded: true, Removed: minus(before, after), Added: minus(after, before)}, nil
		}
		err = j.refuse(err)
	}
	j.failed = now
	return Change{}, err
}

// resumeIfGone ends a refusal once the refused file is gone (now is the
// missing file's stamp): the grants in memory, recorded while the file
// was refused, are kept and journaled by the next Save. The caller holds
// j.mu.
func (j *Journal) resumeIfGone(now stamp) bool {
	if j.refused == nil || now.info != nil {
		return false
	}
	j.refused, j.failed = nil, stamp{}
	j.synced, j.seen, j.base = true, stamp{}, map[rules.SessionGrant]struct{}{}
	return true
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
