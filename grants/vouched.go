package grants

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
)

// vouchedMode is a vouched journal's mode: its reader is the requesting
// child, another user than its writer, and the directories above it
// (0710, the ask group) already keep everyone else from reaching it.
const vouchedMode fs.FileMode = 0o644

// OpenVouched returns the vouched journal of the child session session of
// uid: in the isolation mode (docs/decisions/0024) the broker, not the
// child, records the grants it answered "yes, for this subagent only",
// before it writes the answer, into
// <root>/courier/vouched/<uid>/<escaped session>.json, a file the child can
// read but not write. The child loads it read-only (Load, List) and its
// next ask that matches one resolves locally.
//
// The file must be owned by the broker's user (layout.BrokerOwner, not
// this process's) with mode 0644, on top of every check of a journal
// (side, session, version, facts, not a symlink…). Only a layout in the
// isolation mode has vouched journals.
func OpenVouched(layout mailbox.Layout, uid int, session string) (*Journal, error) {
	if !layout.Isolated() {
		return nil, fmt.Errorf("grant journal: %w: vouched grants exist only in the isolation mode (the broker as its own user)", mailbox.ErrIsolation)
	}
	if uid < 0 {
		return nil, fmt.Errorf("grant journal: vouched grants of uid %d: expected a uid", uid)
	}
	esc, err := mailbox.EscapeSessionID(session)
	if err != nil {
		return nil, fmt.Errorf("grant journal: %w", err)
	}
	return &Journal{
		layout: layout, side: Vouched, session: session, vouched: true, uid: uid,
		path:  filepath.Join(layout.VouchedDir(uid), esc+".json"),
		facts: make(map[rules.SessionGrant]Asked),
	}, nil
}

// OpenChild returns the "this subagent only" journal of the child session
// session as that child reads it: in the isolation mode the one the broker
// vouched for this process's uid (OpenVouched), which the child only
// reads; otherwise the child's own (Open, side Child). In the isolation
// mode the child's own journal, which anything of its uid can write, is
// never the one read.
func OpenChild(layout mailbox.Layout, session string) (*Journal, error) {
	if layout.Isolated() {
		return OpenVouched(layout, os.Geteuid(), session)
	}
	return Open(layout, Child, session)
}

// Vouch records gs at width, given for asked, into the vouched journal, as
// the broker answers approved_for_session: under the directory lock every
// writer takes (brokers of other serving sessions may vouch into the same
// journal), it reads the file, adds what it lacks and writes it back
// durably, creating the directory (layout.EnsureVouchedDir) when missing.
// It returns the grants as recorded (a family-wide grant is one per
// member surface); none is new when the journal held them all. Nothing is
// written when any grant is invalid, the journal is full, or the file is
// refused.
func (j *Journal) Vouch(width rules.Width, gs []rules.SessionGrant, asked Asked) ([]rules.SessionGrant, error) {
	if !j.vouched {
		return nil, fmt.Errorf("grant journal %s: %w: only a vouched journal is vouched into", j.path, ErrNotSaved)
	}
	if err := asked.check(); err != nil {
		return nil, fmt.Errorf("grant journal %s: %w: what the grants were given for is incomplete: %w", j.path, ErrNotSaved, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock, err := j.lock(true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	disk, _, err := j.read()
	if err != nil {
		return nil, err
	}
	held := rules.NewSessionRules("")
	if err := held.Restore(snapshot(grantsOf(disk))); err != nil {
		return nil, j.refuse(err)
	}
	recorded, err := held.Record(width, gs...)
	if err != nil {
		return nil, fmt.Errorf("grant journal %s: %w: %w", j.path, ErrNotSaved, err)
	}
	have := set(grantsOf(disk))
	entries := disk
	for _, g := range recorded {
		if _, dup := have[g]; !dup {
			have[g] = struct{}{}
			entries = append(entries, Entry{Grant: g, Asked: asked})
		}
	}
	if len(entries) == len(disk) {
		return recorded, nil
	}
	return recorded, j.write(entries)
}
