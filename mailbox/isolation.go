package mailbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Isolation is the two-uid mode (docs/decisions/0024): the broker runs as
// a user of its own and the children as theirs, the way Postfix's postdrop
// works. The broker's user owns the whole tree; members of the ask group
// may create requests (and only requests) in a sticky, group-writable
// inbox and read answers; only the broker's user can write responses,
// heartbeats and grants. A nil *Isolation in a Layout is the same-uid mode
// every pi peer uses.
type Isolation struct {
	// BrokerUID owns the tree, every response, heartbeat and vouched
	// grant journal. A reader refuses any of these another uid owns.
	BrokerUID int
	// GID is the ask group. The broker sets it (it gives the tree that
	// group); a child, which only reads the tree, leaves it -1.
	GID int
}

// Modes of the isolation tree. Directories carry the ask group; files are
// world-readable because the directories above them already keep everyone
// outside the group out (0750/0710 and no "other" bits), and a request a
// child writes must be readable by the broker's user, which is not its
// owner.
const (
	// isoDirMode: the root, sessions/, each session, responses/,
	// serving/: the broker writes, the group lists and reads (a child's
	// response watch needs read on responses/ for inotify).
	isoDirMode fs.FileMode = 0o750
	// isoDropMode: requests/ and tmp/: the group may create and remove
	// its own files (sticky) but not list, so one child cannot learn
	// another's request names.
	isoDropMode fs.FileMode = 0o730 | fs.ModeSticky
	// isoStateMode: courier/: only traversal, so a child reaches
	// courier/vouched/ by name and nothing else of the broker's state.
	isoStateMode fs.FileMode = 0o711
	// isoVouchedMode: courier/vouched/ and its per-uid directories: the
	// group reaches a journal by name, lists nothing.
	isoVouchedMode fs.FileMode = 0o710
	// isoFileMode: requests, responses, heartbeats and vouched journals.
	isoFileMode fs.FileMode = 0o644
)

// vouchedDirName holds the grant journals the broker keeps for children
// in the isolation mode (package grants): <root>/courier/vouched/<uid>/.
const vouchedDirName = "vouched"

// ErrIsolation is wrapped by the errors that refuse an isolation tree a
// reader or the broker cannot trust, and by a child's errors in a tree
// where only the broker may create directories.
var ErrIsolation = errors.New("isolation mode")

// Isolated reports whether l is the two-uid mode.
func (l Layout) Isolated() bool { return l.Isolation != nil }

// brokerSide reports whether this process is the isolation tree's owner
// (the broker), which alone creates and fixes its directories.
func (l Layout) brokerSide() bool {
	return l.Isolation != nil && l.Isolation.GID >= 0 && os.Geteuid() == l.Isolation.BrokerUID
}

// BrokerOwner is the owner every response, heartbeat and broker-written
// journal must have: the broker's uid in the isolation mode, this
// process's otherwise.
func (l Layout) BrokerOwner() Owner {
	if l.Isolation != nil {
		return Owner(l.Isolation.BrokerUID)
	}
	return Owner(processEUID)
}

// RequestOwner is the owner a request file must have: any in the
// isolation mode (the owner is the requester's uid, the principal the
// broker vouches for), this process's otherwise.
func (l Layout) RequestOwner() Owner {
	if l.Isolation != nil {
		return AnyOwner
	}
	return Owner(processEUID)
}

// mailFileMode is the mode of requests, responses and heartbeats.
func (l Layout) mailFileMode() fs.FileMode {
	if l.Isolation != nil {
		return isoFileMode
	}
	return fileMode
}

// DetectIsolation is a child's view of the tree at root. brokerUID < 0
// (no --broker-user) is the same-uid mode, for a root of this user or a
// missing one; a root another user owns is then refused with an error
// wrapping ErrIsolation that names the owner and says how to pin it. A
// child never takes a root's owner as its broker on its own: a root in a
// directory others can create names in (/tmp, /dev/shm) may be anyone's,
// and one under a path the subagent controls could be swapped to lower
// the mode. brokerUID >= 0 pins the broker's user (a child's
// --broker-user): the isolation mode, and a root anyone else owns is
// refused.
func DetectIsolation(root string, brokerUID int) (*Isolation, error) {
	var st unix.Stat_t
	err := unix.Stat(root, &st)
	switch {
	case errors.Is(err, unix.ENOENT) && brokerUID < 0:
		return nil, nil
	case errors.Is(err, unix.ENOENT):
		return nil, fmt.Errorf("%w: mailbox root %s does not exist, and only the broker's user (uid %d) creates it", ErrIsolation, root, brokerUID)
	case err != nil:
		return nil, fmt.Errorf("mailbox root: %w", &fs.PathError{Op: "stat", Path: root, Err: err})
	}
	owner := int(st.Uid)
	switch {
	case brokerUID < 0 && owner == processEUID:
		return nil, nil
	case brokerUID < 0:
		return nil, fmt.Errorf("%w: mailbox root %s is owned by uid %d, not by this user (uid %d): if the broker runs as that user, name it with --broker-user %d or $COURIER_BROKER_USER; a child trusts no other user's answers unless told to", ErrIsolation, root, owner, processEUID, owner)
	case owner != brokerUID:
		return nil, fmt.Errorf("%w: mailbox root %s is owned by uid %d, expected the broker's user (uid %d)", ErrIsolation, root, owner, brokerUID)
	}
	return &Isolation{BrokerUID: owner, GID: -1}, nil
}

// PrepareIsolated gives the tree at the root the isolation mode's owners
// and modes, creating what is missing: the root, sessions/ and serving/
// 0750, tmp/ 1730, courier/ 0711 and courier/vouched/ 0710, each of the
// broker's user and the ask group. Only the broker calls it, once before
// it serves; the operator chose the mode, so existing directories of the
// broker's user are changed to it. A directory another user owns is
// refused, never taken over.
func (l Layout) PrepareIsolated() error {
	if !l.brokerSide() {
		return fmt.Errorf("%w: only the broker's user (uid %d) prepares the tree, not uid %d", ErrIsolation, l.Isolation.BrokerUID, os.Geteuid())
	}
	steps := []struct {
		dir  string
		mode fs.FileMode
	}{
		{l.Root, isoDirMode},
		{l.SessionsDir(), isoDirMode},
		{l.ServingDir(), isoDirMode},
		{l.TempDir(), isoDropMode},
		{l.StateDir(), isoStateMode},
		{filepath.Join(l.StateDir(), vouchedDirName), isoVouchedMode},
	}
	for _, s := range steps {
		if err := l.isoDir(s.dir, s.mode); err != nil {
			return err
		}
	}
	return nil
}

// VouchedDir is where the broker keeps the grants it vouched for the
// children of uid in the isolation mode: <root>/courier/vouched/<uid>.
func (l Layout) VouchedDir(uid int) string {
	return filepath.Join(l.StateDir(), vouchedDirName, fmt.Sprint(uid))
}

// EnsureVouchedDir creates VouchedDir(uid) (0710, the ask group) on the
// broker's side.
func (l Layout) EnsureVouchedDir(uid int) error {
	if !l.brokerSide() {
		return fmt.Errorf("%w: only the broker's user writes vouched grants", ErrIsolation)
	}
	return l.isoDir(l.VouchedDir(uid), isoVouchedMode)
}

// mkdir creates dir as the layout's mode makes directories: in the
// same-uid mode private, with its missing parents when all; in the
// isolation mode one directory of the broker's user and the ask group
// with isoMode (isoDir: its parents are PrepareIsolated's, and a child
// may create none).
func (l Layout) mkdir(dir string, all bool, isoMode fs.FileMode) error {
	switch {
	case l.Isolation != nil:
		return l.isoDir(dir, isoMode)
	case all:
		return mkdirAllPrivate(dir)
	}
	return mkdirPrivate(dir)
}

// isoDir makes dir a directory of the broker's user and the ask group
// with mode, whatever the umask.
func (l Layout) isoDir(dir string, mode fs.FileMode) error {
	err := os.Mkdir(dir, 0o700)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create mailbox directory %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("mailbox directory: %w", &fs.PathError{Op: "lstat", Path: dir, Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return refuse(dir, ErrNotDirectory, "%s", typeName(st.Mode))
	}
	if int(st.Uid) != l.Isolation.BrokerUID {
		return refuse(dir, ErrWrongOwner, "uid %d, expected the broker's user (uid %d)", st.Uid, l.Isolation.BrokerUID)
	}
	if int(st.Gid) != l.Isolation.GID {
		if err := os.Lchown(dir, -1, l.Isolation.GID); err != nil {
			return fmt.Errorf("give mailbox directory %s the ask group (gid %d; the broker's user must be a member): %w", dir, l.Isolation.GID, err)
		}
	}
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("set mode of mailbox directory %s: %w", dir, err)
	}
	return nil
}

// ensureInboxIsolated is EnsureInbox in the isolation mode. The broker
// creates the session's directories with the mode's owners and modes; a
// child, which may not create them, only checks that they exist.
func (l Layout) ensureInboxIsolated(dir string) error {
	if !l.brokerSide() {
		for _, sub := range []string{requestsDirName, responsesDirName} {
			if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
				return fmt.Errorf("%w: the inbox %s is missing, and only the broker's user (uid %d) creates it (is the broker serving?)", ErrIsolation, filepath.Join(dir, sub), l.Isolation.BrokerUID)
			}
		}
		return nil
	}
	if err := l.isoDir(dir, isoDirMode); err != nil {
		return err
	}
	if err := l.isoDir(filepath.Join(dir, requestsDirName), isoDropMode); err != nil {
		return err
	}
	return l.isoDir(filepath.Join(dir, responsesDirName), isoDirMode)
}

// checkIsoDir judges one directory of an isolation tree for CheckTree:
// group write only where the mode gives it (tmp/ and each requests/,
// sticky, of the ask group), never write for others. A group-writable
// responses/ or serving/ would let a child plant files the broker's
// readers then refuse one by one; nothing needs it.
func (l Layout) checkIsoDir(path string, st *unix.Stat_t) error {
	perm := st.Mode & 0o777
	switch {
	case perm&0o002 != 0:
		return refuse(path, ErrWritableByOthers, "mode %#o", perm)
	case perm&0o020 == 0:
		return nil
	case !l.isDropDir(path):
		return refuse(path, ErrWritableByOthers, "mode %#o, group-writable where only requests/ and tmp/ may be", perm)
	case st.Mode&unix.S_ISVTX == 0:
		return refuse(path, ErrWritableByOthers, "mode %#o, group-writable without the sticky bit", perm)
	case int(st.Gid) != l.Isolation.GID:
		return refuse(path, ErrWritableByOthers, "mode %#o, group-writable by gid %d, expected the ask group (gid %d)", perm, st.Gid, l.Isolation.GID)
	}
	return nil
}

// isDropDir reports whether path is one of the tree's drop directories:
// tmp/ or a session's requests/.
func (l Layout) isDropDir(path string) bool {
	path = filepath.Clean(path)
	if path == l.TempDir() {
		return true
	}
	return filepath.Base(path) == requestsDirName && filepath.Dir(filepath.Dir(path)) == l.SessionsDir()
}
