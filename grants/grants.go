// Package grants keeps session grants on disk, so that "yes, for this
// session" survives a restart: the broker journals its whole-session
// grants, and a child records the grants its parent gave it for its own
// session.
//
// A journal is one JSON file (rules.Snapshot), rewritten atomically and
// made durable on every change, in courier's state directory beside the
// mailbox: <root>/courier/grants/<broker|child>/<escaped session>.json.
// It is read back like any mailbox file: untrusted, size-capped, validated.
// A journal that is unsafe to read or malformed is an error naming the
// file, and is never half-applied.
//
// # Several writers
//
// The process that owns a journal (the broker serving the session, or a
// child asking in it) is not its only writer: an operator lists and
// revokes grants from another process (broker grants, child grants), and
// several child processes of one session may record at once. Every write
// (Save, Revoke) holds an exclusive lock on the journal's directory while
// it reads the file and replaces it, so no change is lost between two
// writers. Save writes what its caller recorded on top of what the file
// holds by then: a grant someone else added is kept, and one someone else
// revoked stays revoked, in the file and in the caller's session rules.
//
// A long-lived owner (the broker) calls Reload on a timer: when the file is
// no longer the one this Journal last read or wrote (its inode, size and
// modification time), its grants replace those in memory. An owner that
// records from several goroutines brackets each Record and Save with
// Recording, so that a Reload never replaces a grant recorded but not yet
// saved.
package grants

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
)

// Side says whose grants a journal holds.
type Side string

// The two sides that keep grants.
const (
	// Broker journals are the serving session's whole-session grants.
	Broker Side = "broker"
	// Child journals are a child session's own "this subagent only" grants.
	Child Side = "child"
)

// ErrNotSaved is wrapped by the errors of Save and Revoke that left the
// journal as it was because it could not be locked or written (as opposed
// to a journal that is unsafe or malformed, or a grant that is not there).
var ErrNotSaved = errors.New("not saved")

// Journal persists the grants of one session.
type Journal struct {
	layout  mailbox.Layout
	side    Side
	session string
	path    string
	// recording is held by Recording across a caller's Record and Save,
	// and tried by Reload.
	recording sync.Mutex
	// mu serializes this process's reads and writes of the file and
	// guards the fields below.
	mu sync.Mutex
	// synced says seen and base are known: the file was read or written.
	synced bool
	// seen is the file as this Journal last read or wrote it; base is
	// the grants it held then, which tells a caller's new grants from
	// those someone else revoked since.
	seen stamp
	base map[rules.SessionGrant]struct{}
	// failed is a file Reload could not take in, and statFailed says it
	// could not look at the file: each is reported once, not on every
	// tick.
	failed     stamp
	statFailed bool
}

// Open returns the journal of session on side. Nothing is read or
// created until Load or Save.
func Open(layout mailbox.Layout, side Side, session string) (*Journal, error) {
	esc, err := mailbox.EscapeSessionID(session)
	if err != nil {
		return nil, fmt.Errorf("grant journal: %w", err)
	}
	path := filepath.Join(layout.StateDir(), "grants", string(side), esc+".json")
	return &Journal{layout: layout, side: side, session: session, path: path}, nil
}

// Path is the journal file.
func (j *Journal) Path() string { return j.path }

// Load restores the journal into into. A missing journal is an empty one.
// A journal that is unsafe to read or malformed is an error naming the
// file: it is never half-applied.
func (j *Journal) Load(into *rules.SessionRules) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	snap, st, err := j.read()
	if err != nil {
		return err
	}
	if err := into.Restore(snap); err != nil {
		return fmt.Errorf("grant journal %s: %w", j.path, err)
	}
	j.synced, j.seen, j.base = true, st, set(snap.Grants)
	return nil
}

// Save writes from's grants durably: atomically replaced, then the file
// and its directory synced, so an acknowledged grant survives a crash.
//
// When the file changed since this Journal last read or wrote it, the
// grants written are those it holds now plus the ones recorded into from
// since, and from is restored to exactly them: what someone else revoked
// stays revoked. A file that cannot be read then is an error, and nothing
// is written.
func (j *Journal) Save(from *rules.SessionRules) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock, err := j.lock(true)
	if err != nil {
		return err
	}
	defer unlock()
	gs := from.Grants()
	now, err := statJournal(j.path)
	if err != nil {
		return fmt.Errorf("grant journal: %w", err)
	}
	if !j.synced || !now.same(j.seen) {
		disk, _, err := j.read()
		if err != nil {
			return err
		}
		gs = merge(disk.Grants, gs, j.base)
		if err := from.Restore(snapshot(gs)); err != nil {
			return fmt.Errorf("grant journal %s: %w", j.path, err)
		}
	}
	return j.write(gs)
}

// read decodes the file as it is now, with the stamp it had before it was
// read (a change during the read shows as a newer stamp next time). A
// missing file is an empty snapshot. The caller holds j.mu.
func (j *Journal) read() (rules.Snapshot, stamp, error) {
	st, err := statJournal(j.path)
	if err != nil {
		return rules.Snapshot{}, stamp{}, fmt.Errorf("grant journal: %w", err)
	}
	data, err := mailbox.ReadFile(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return snapshot(nil), stamp{}, nil
	}
	if err != nil {
		return rules.Snapshot{}, stamp{}, fmt.Errorf("grant journal: %w", err)
	}
	snap, err := rules.DecodeSnapshot(data)
	if err != nil {
		return rules.Snapshot{}, stamp{}, fmt.Errorf("grant journal %s: %w", j.path, err)
	}
	return snap, st, nil
}

// write replaces the file with gs, durably, and remembers it as seen. The
// caller holds j.mu and the directory lock.
func (j *Journal) write(gs []rules.SessionGrant) error {
	data, err := encodeSnapshot(snapshot(gs))
	if err != nil {
		return fmt.Errorf("grant journal %s: %w", j.path, err)
	}
	if err := j.layout.WriteFile(j.path, data, mailbox.WriteOptions{SyncDir: true}); err != nil {
		return fmt.Errorf("grant journal: %w: %w", ErrNotSaved, err)
	}
	st, err := statJournal(j.path)
	if err != nil {
		// Written, but not recognisable: the next Reload reads it back.
		j.synced = false
		return nil
	}
	j.synced, j.seen, j.base = true, st, set(gs)
	return nil
}

// snapshot is the journal shape of gs; never a null grants array.
func snapshot(gs []rules.SessionGrant) rules.Snapshot {
	if gs == nil {
		gs = []rules.SessionGrant{}
	}
	return rules.Snapshot{Version: rules.SnapshotVersion, Grants: gs}
}

func set(gs []rules.SessionGrant) map[rules.SessionGrant]struct{} {
	m := make(map[rules.SessionGrant]struct{}, len(gs))
	for _, g := range gs {
		m[g] = struct{}{}
	}
	return m
}

// merge returns the grants on disk followed by those of mem that are new
// since base (recorded by this process, not yet written), in their order.
// A grant of base missing from disk was revoked by someone else: it is not
// brought back.
func merge(disk, mem []rules.SessionGrant, base map[rules.SessionGrant]struct{}) []rules.SessionGrant {
	out := make([]rules.SessionGrant, 0, len(disk)+len(mem))
	have := set(disk)
	out = append(out, disk...)
	for _, g := range mem {
		if _, old := base[g]; old {
			continue
		}
		if _, dup := have[g]; dup {
			continue
		}
		have[g] = struct{}{}
		out = append(out, g)
	}
	return out
}
