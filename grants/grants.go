// Package grants keeps session grants on disk, so that "yes, for this
// session" survives a restart: the broker journals its whole-session
// grants, and a child records the grants its parent gave it for its own
// session.
//
// A journal is one JSON file (format.go), rewritten atomically and made
// durable on every change, in courier's state directory beside the
// mailbox: <root>/courier/grants/<broker|child>/<escaped session>.json.
// Every grant in it carries what it was given for ([Asked]): the request
// id, the surface and value asked, the agent, when it was recorded and who
// answered.
//
// In the isolation mode (the broker as its own user) a child's "this
// subagent only" grants are kept by the broker instead, in a vouched
// journal the child reads but cannot write:
// <root>/courier/vouched/<uid>/<escaped session>.json, mode 0644, owned by
// the broker's user (OpenVouched, Journal.Vouch).
//
// # A journal that is not its owner's
//
// A journal is read back as untrusted input. One that its owner did not
// write is refused whole, never half-applied, with an error naming the
// file and what to do ([RefusedError], wrapping [ErrRefused]): a file
// whose mode is not 0600 or that another user owns (a vouched journal:
// not 0644, or not the broker's user's, whoever reads it), a symlink or other
// unsafe file, the old format (version 1, grants without facts), a grant
// without what was asked and when, a journal of another session or side,
// or anything malformed. Load remembers the refusal: Save then writes
// nothing over the refused file (the grants recorded meanwhile hold in
// memory only) until the operator removes it; Reload notices the removal
// and journaling resumes.
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
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/seed6639df8c/courier/internal/fileperm"
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
	// Vouched journals are a child session's "this subagent only" grants
	// in the isolation mode, kept by the broker's user (see OpenVouched).
	Vouched Side = "vouched"
)

// ErrNotSaved is wrapped by the errors of Save and Revoke that left the
// journal as it was because it could not be locked or written, or was
// refused at Load (as opposed to a journal that is unsafe or malformed
// now, or a grant that is not there).
var ErrNotSaved = errors.New("not saved")

// ErrRefused is wrapped by the error about a journal its owner will not
// take in (see the package documentation).
var ErrRefused = errors.New("refused")

// RefusedError refuses a journal file: it names the file, why, and what to
// do. It wraps ErrRefused and the reason.
type RefusedError struct {
	// Path is the journal file.
	Path string
	// Side is whose journal it is.
	Side Side
	// Reason is what is wrong with it.
	Reason error
}

// Error reads "grant journal <path> refused: <reason>; remove it: …".
func (e *RefusedError) Error() string {
	fix := "remove it: its grants are asked again at the prompt"
	switch e.Side {
	case Child:
		fix = "remove it: its asks go to the parent again"
	case Vouched:
		fix = "remove it as the broker's user: its asks go to the broker again"
	}
	return fmt.Sprintf("grant journal %s refused: %v; %s", e.Path, e.Reason, fix)
}

// Unwrap returns ErrRefused and the reason.
func (e *RefusedError) Unwrap() []error { return []error{ErrRefused, e.Reason} }

// Journal persists the grants of one session.
type Journal struct {
	layout  mailbox.Layout
	side    Side
	session string
	path    string
	// vouched is a journal of side Vouched: written by the broker's user
	// with mode 0644 into layout.VouchedDir(uid), read by that uid's
	// children.
	vouched bool
	uid     int
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
	// facts is what each grant was given for, as read from the file or
	// noted by Save for the grants its caller recorded.
	facts map[rules.SessionGrant]Asked
	// refused is why Load refused the file: Save writes nothing while
	// that file is there.
	refused error
	// failed is a file Reload (or Load) could not take in, and
	// statFailed says it could not look at the file: each is reported
	// once, not on every tick.
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
	return &Journal{layout: layout, side: side, session: session, path: path, facts: make(map[rules.SessionGrant]Asked)}, nil
}

// Path is the journal file.
func (j *Journal) Path() string { return j.path }

// Load restores the journal into into. A missing journal is an empty one.
// A journal that cannot be taken in is an error naming the file (a
// *RefusedError when it is not this owner's): nothing of it is applied,
// and until the file is removed Save writes nothing over it.
func (j *Journal) Load(into *rules.SessionRules) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	entries, st, err := j.read()
	if err == nil {
		if err = into.Restore(snapshot(grantsOf(entries))); err != nil {
			err = j.refuse(err)
		}
	}
	if err != nil {
		j.refused, j.failed = err, st
		if st.info == nil {
			j.failed, _ = statJournal(j.path)
		}
		return err
	}
	j.take(entries, st)
	return nil
}

// Refused returns why Load refused the file, or nil.
func (j *Journal) Refused() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.refused
}

// Entries returns the grants of from, in its order, with what each was
// given for as far as this Journal knows it (read from the file, or noted
// by Save).
func (j *Journal) Entries(from *rules.SessionRules) []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	gs := from.Grants()
	out := make([]Entry, len(gs))
	for i, g := range gs {
		out[i] = Entry{Grant: g, Asked: j.facts[g]}
	}
	return out
}

// Save writes from's grants durably: atomically replaced, then the file
// and its directory synced, so an acknowledged grant survives a crash.
// asked is what the grants recorded into from since the last Save were
// given for; the journal keeps it beside each of them.
//
// When the file changed since this Journal last read or wrote it, the
// grants written are those it holds now plus the ones recorded into from
// since, and from is restored to exactly them: what someone else revoked
// stays revoked. A file that cannot be read then is an error, and nothing
// is written; so is a file Load refused, which stays as it is until it is
// removed (the grants hold in from, for this process's life).
func (j *Journal) Save(from *rules.SessionRules, asked Asked) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := asked.check(); err != nil {
		return fmt.Errorf("grant journal %s: %w: what the grants were given for is incomplete: %w", j.path, ErrNotSaved, err)
	}
	gs := from.Grants()
	for _, g := range gs {
		if _, known := j.facts[g]; !known {
			j.facts[g] = asked
		}
	}
	if j.refused != nil {
		now, err := statJournal(j.path)
		if err != nil || !j.resumeIfGone(now) {
			return fmt.Errorf("%w: the grants hold until this process ends: %w", ErrNotSaved, j.refused)
		}
	}
	unlock, err := j.lock(true)
	if err != nil {
		return err
	}
	defer unlock()
	now, err := statJournal(j.path)
	if err != nil {
		return fmt.Errorf("grant journal: %w", err)
	}
	if !j.synced || !now.same(j.seen) {
		disk, _, err := j.read()
		if err != nil {
			return err
		}
		for _, e := range disk {
			j.facts[e.Grant] = e.Asked
		}
		if j.side == Broker {
			gs = mergeBroker(grantsOf(disk), gs, j.base)
		} else {
			gs = merge(grantsOf(disk), gs, j.base)
		}
		if err := from.Restore(snapshot(gs)); err != nil {
			return fmt.Errorf("grant journal %s: %w", j.path, err)
		}
	}
	return j.write(j.entriesOf(gs))
}

// read decodes the file as it is now, with the stamp it had before it was
// read (a change during the read shows as a newer stamp next time). A
// missing file is no entries. The caller holds j.mu.
func (j *Journal) read() ([]Entry, stamp, error) {
	st, err := statJournal(j.path)
	if err != nil {
		return nil, stamp{}, fmt.Errorf("grant journal: %w", err)
	}
	if st.info != nil {
		if err := j.checkOwn(st.info); err != nil {
			return nil, st, j.refuse(err)
		}
	}
	data, err := mailbox.ReadFileOf(j.path, j.owner())
	if errors.Is(err, os.ErrNotExist) {
		return nil, stamp{}, nil
	}
	var unsafe *mailbox.UnsafeFileError
	if errors.As(err, &unsafe) {
		return nil, st, j.refuse(err)
	}
	if err != nil {
		return nil, st, fmt.Errorf("grant journal: %w", err)
	}
	entries, err := decodeJournal(data, j.side, j.session)
	if err != nil {
		return nil, st, j.refuse(err)
	}
	return entries, st, nil
}

// checkOwn refuses a file its owner did not leave as it leaves it: mode
// 0600 (every write makes it so) and owned by this process's user; a
// vouched journal mode 0644 and owned by the broker's user, whichever
// process reads it.
func (j *Journal) checkOwn(fi os.FileInfo) error {
	want, whose := fs.FileMode(0o600), "this process's user"
	if j.vouched {
		want, whose = vouchedMode, "the broker's user"
	}
	if perm := fi.Mode().Perm(); fi.Mode().IsRegular() && perm != want {
		return fmt.Errorf("mode %04o, expected %04o (courier writes its journals so; another mode means someone else wrote or changed it)", perm, want)
	}
	if uid, ok := fileperm.Owner(fi); ok && uid != int(j.owner()) {
		return fmt.Errorf("owned by uid %d, expected %d (%s)", uid, j.owner(), whose)
	}
	return nil
}

// owner is the uid the journal file must have.
func (j *Journal) owner() mailbox.Owner {
	if j.vouched {
		return j.layout.BrokerOwner()
	}
	return mailbox.Owner(os.Geteuid())
}

func (j *Journal) refuse(err error) error {
	return &RefusedError{Path: j.path, Side: j.side, Reason: err}
}

// take remembers entries as the file's content at st. The caller holds
// j.mu.
func (j *Journal) take(entries []Entry, st stamp) {
	for _, e := range entries {
		j.facts[e.Grant] = e.Asked
	}
	j.synced, j.seen, j.base = true, st, set(grantsOf(entries))
	j.refused, j.failed = nil, stamp{}
}

// entriesOf pairs gs with their facts. The caller holds j.mu.
func (j *Journal) entriesOf(gs []rules.SessionGrant) []Entry {
	out := make([]Entry, len(gs))
	for i, g := range gs {
		out[i] = Entry{Grant: g, Asked: j.facts[g]}
	}
	return out
}

// write replaces the file with entries, durably, and remembers it as
// seen. The caller holds j.mu and the directory lock. An entry without
// its facts is never written: the file would be refused.
func (j *Journal) write(entries []Entry) error {
	data, err := encodeJournal(j.side, j.session, entries)
	if err != nil {
		return fmt.Errorf("grant journal %s: %w: %w", j.path, ErrNotSaved, err)
	}
	if len(data) > mailbox.MaxFileSize {
		// Load reads at most MaxFileSize: a larger file would be refused
		// at the next start, and journaling would stop until removed.
		return fmt.Errorf("grant journal %s: %w: it would be %d bytes, over the %d-byte cap the journal is read with; the grants hold in memory until this process ends", j.path, ErrNotSaved, len(data), mailbox.MaxFileSize)
	}
	opts := mailbox.WriteOptions{SyncDir: true}
	if j.vouched {
		opts.Mode = vouchedMode
	}
	if err := j.layout.WriteFile(j.path, data, opts); err != nil {
		return fmt.Errorf("grant journal: %w: %w", ErrNotSaved, err)
	}
	st, err := statJournal(j.path)
	if err != nil {
		// Written, but not recognisable: the next Reload reads it back.
		j.synced = false
		return nil
	}
	j.synced, j.seen, j.base = true, st, set(grantsOf(entries))
	// What was written is what the owner holds now: the facts of grants
	// revoked meanwhile are not kept.
	j.facts = make(map[rules.SessionGrant]Asked, len(entries))
	for _, e := range entries {
		j.facts[e.Grant] = e.Asked
	}
	return nil
}

// snapshot is the session rules' shape of gs; never a null grants array.
func snapshot(gs []rules.SessionGrant) rules.Snapshot {
	if gs == nil {
		gs = []rules.SessionGrant{}
	}
	return rules.Snapshot{Version: rules.SnapshotVersion, Grants: gs}
}

func grantsOf(entries []Entry) []rules.SessionGrant {
	out := make([]rules.SessionGrant, len(entries))
	for i, e := range entries {
		out[i] = e.Grant
	}
	return out
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

// mergeBroker is merge for a broker's journal, whose only other writer
// revokes: the grants of mem, less those of base the disk no longer holds.
// A grant only the disk holds was not written by this broker and is not
// taken in (see Journal.Reload).
func mergeBroker(disk, mem []rules.SessionGrant, base map[rules.SessionGrant]struct{}) []rules.SessionGrant {
	have := set(disk)
	out := make([]rules.SessionGrant, 0, len(mem))
	for _, g := range mem {
		_, old := base[g]
		_, kept := have[g]
		if old && !kept {
			continue
		}
		out = append(out, g)
	}
	return out
}
