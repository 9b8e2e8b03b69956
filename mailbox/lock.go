package mailbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// One serving broker per session (docs/decisions/0017-one-broker-per-session.md).
// The heartbeat cannot say it: two brokers would both write it, each
// rewriting the other's pid, and the first to stop would withdraw it while
// the other still served. A flock(2) on a file of the session's own can:
// the kernel holds it for as long as the holder's open file lives and drops
// it when the process dies, SIGKILL included, so a dead broker never blocks
// its successor and no stale pid is ever trusted.

// servingLockDirName is the directory of the serving locks, under the
// state directory: <root>/courier/serving. pi never looks there.
const servingLockDirName = "serving"

// ServingLockGrace is how long LockServing waits for a lock that is held:
// a broker killed a moment ago releases it as its process exits, which can
// take a few milliseconds after the kill, so a successor started at once
// is not turned away by a dying predecessor. A live holder keeps it.
const ServingLockGrace = 500 * time.Millisecond

// ErrServed is wrapped by the error LockServing returns when another
// process serves the session.
var ErrServed = errors.New("session is already served")

// ServedError says who holds a session's serving lock, as far as the lock
// file tells: PID is 0 and Since zero when the holder has not written them
// yet (it has just started).
type ServedError struct {
	// Session is the serving session id.
	Session string
	// PID is the holder's process id.
	PID int
	// Since is when the holder took the lock.
	Since time.Time
	// Path is the lock file.
	Path string
}

// Error implements error: "session "P" is already served by pid N (since …)".
func (e *ServedError) Error() string {
	by := "another process"
	if e.PID > 0 {
		by = fmt.Sprintf("pid %d", e.PID)
	}
	since := ""
	if !e.Since.IsZero() {
		since = " (since " + e.Since.Local().Format("2006-01-02 15:04:05 MST") + ")"
	}
	return fmt.Sprintf("session %q is already served by %s%s; one broker serves a session (its lock: %s)", e.Session, by, since, e.Path)
}

// Unwrap makes errors.Is(err, ErrServed) hold.
func (e *ServedError) Unwrap() error { return ErrServed }

// lockRecord is what a holder writes into its lock file, for the message
// a second broker prints. It is never trusted for anything else: the
// flock, not the record, says whether the session is served.
type lockRecord struct {
	SessionID string `json:"sessionId"`
	PID       int    `json:"pid"`
	// Since is when the lock was taken, in milliseconds since the epoch.
	Since int64 `json:"since"`
}

// maxLockRecord bounds what is read of a lock file.
const maxLockRecord = 4096

// ServingLock is this process's hold on a session: while it is held, no
// other LockServing of the same session and root succeeds.
type ServingLock struct {
	f    *os.File
	path string
}

// ServingLockPath is the lock file of session:
// <root>/courier/serving/<escaped session>.lock.
func (l Layout) ServingLockPath(session string) (string, error) {
	esc, err := EscapeSessionID(session)
	if err != nil {
		return "", err
	}
	return filepath.Join(l.StateDir(), servingLockDirName, esc+".lock"), nil
}

// LockServing takes session's serving lock for this process, creating the
// lock file (0600, in a 0700 directory) when needed, and records this
// process's pid and the time in it. When another process holds it,
// LockServing waits up to ServingLockGrace (less if ctx ends first) for it
// to be released, then returns a *ServedError naming the holder. The lock
// is held until Release or the process's death.
func (l Layout) LockServing(ctx context.Context, session string) (*ServingLock, error) {
	path, err := l.ServingLockPath(session)
	if err != nil {
		return nil, err
	}
	session, _ = NormalizeSessionID(session) // it escaped, so it normalizes
	if err := l.EnsureDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("serving lock: %w", err)
	}
	grace := time.NewTimer(ServingLockGrace)
	defer grace.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		lock, busy, err := tryLock(path)
		if err != nil {
			return nil, fmt.Errorf("serving lock %s: %w", path, err)
		}
		if lock != nil {
			if err := lock.record(session); err != nil {
				lock.f.Close()
				return nil, fmt.Errorf("serving lock %s: %w", path, err)
			}
			return lock, nil
		}
		select {
		case <-tick.C:
			busy.Close()
			continue
		case <-grace.C:
		case <-ctx.Done():
		}
		served := &ServedError{Session: session, Path: path}
		served.PID, served.Since = readLockRecord(busy)
		busy.Close()
		return nil, served
	}
}

// tryLock opens path and tries to lock it without waiting. It returns the
// lock, or (when another process holds it) the open file so the caller
// can read who, or an error.
func tryLock(path string) (lock *ServingLock, busy *os.File, err error) {
	// A lock file is never removed (removing it would let a successor lock
	// a new file while a latecomer still locks the old one), but should
	// something replace it between the open and the flock, the lock would
	// be on a file nobody else opens: open again until the file locked is
	// the one at path.
	for range 8 {
		// Read-only: flock needs no write access, and a descriptor open
		// for writing for the broker's whole life would keep the mailbox's
		// filesystem from being remounted read-only (EBUSY). The record is
		// written through a descriptor of its own, closed at once.
		// O_NONBLOCK: a FIFO planted here must not block the open.
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o600)
		if err != nil {
			return nil, nil, err
		}
		if err := checkLockFile(f); err != nil {
			f.Close()
			return nil, nil, err
		}
		err = retryInterrupted(func() error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) })
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, f, nil
		}
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("flock: %w", err)
		}
		if sameFile(f, path) {
			return &ServingLock{f: f, path: path}, nil, nil
		}
		f.Close()
	}
	return nil, nil, errors.New("the lock file keeps being replaced")
}

// checkLockFile refuses a lock file that is not a regular file of ours:
// the state directory is 0700, so either means someone tampered with it.
func checkLockFile(f *os.File) error {
	var st unix.Stat_t
	if err := retryInterrupted(func() error { return unix.Fstat(int(f.Fd()), &st) }); err != nil {
		return fmt.Errorf("fstat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return refuse(f.Name(), ErrNotRegular, "%s", typeName(st.Mode))
	}
	if int(st.Uid) != processEUID {
		return refuse(f.Name(), ErrWrongOwner, "uid %d, expected %d", st.Uid, processEUID)
	}
	return nil
}

// sameFile reports whether path still names the file f has open.
func sameFile(f *os.File, path string) bool {
	open, err := f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Lstat(path)
	return err == nil && os.SameFile(open, now)
}

// record writes this process's pid and the time into the held lock file.
func (s *ServingLock) record(session string) error {
	data, err := json.Marshal(lockRecord{SessionID: session, PID: os.Getpid(), Since: time.Now().UnixMilli()})
	if err != nil {
		return err
	}
	return s.rewrite(data)
}

// rewrite replaces the held lock file's content with data, through a
// descriptor opened for the write alone.
func (s *ServingLock) rewrite(data []byte) error {
	w, err := os.OpenFile(s.path, os.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	if !sameOpenFile(w, s.f) {
		w.Close()
		return errors.New("the lock file was replaced")
	}
	err = w.Truncate(0)
	if err == nil {
		_, err = w.Write(data)
	}
	return errors.Join(err, w.Close())
}

// sameOpenFile reports whether a and b are open on one file.
func sameOpenFile(a, b *os.File) bool {
	sa, errA := a.Stat()
	sb, errB := b.Stat()
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// readLockRecord reads the holder's pid and start time from its lock
// file; zeros when it has not written them yet or they do not decode.
func readLockRecord(f *os.File) (pid int, since time.Time) {
	data, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, 0, maxLockRecord), maxLockRecord))
	if err != nil {
		return 0, time.Time{}
	}
	var r lockRecord
	if json.Unmarshal(data, &r) != nil || signalablePID(r.PID) != nil {
		return 0, time.Time{}
	}
	if r.Since > 0 {
		since = time.UnixMilli(r.Since)
	}
	return r.PID, since
}

// Path is the lock file.
func (s *ServingLock) Path() string { return s.path }

// Release gives the session up: the record is emptied (it would name a
// process that no longer serves) and the lock dropped. The file stays.
// Release is safe to call more than once.
func (s *ServingLock) Release() error {
	if s == nil || s.f == nil {
		return nil
	}
	truncErr := s.rewrite(nil)
	closeErr := s.f.Close() // closing the last descriptor drops the flock
	s.f = nil
	if err := errors.Join(truncErr, closeErr); err != nil {
		return fmt.Errorf("release serving lock %s: %w", s.path, err)
	}
	return nil
}

func retryInterrupted(f func() error) error {
	for {
		if err := f(); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
