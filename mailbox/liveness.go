package mailbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/seed6639df8c/courier/wire"
	"golang.org/x/sys/unix"
)

// Heartbeat timing, pi's values: a serving node rewrites its record every
// HeartbeatInterval, and a record HeartbeatStaleAfter old or older belongs
// to a node that stopped serving even if its process lives on.
const (
	HeartbeatInterval   = time.Second
	HeartbeatStaleAfter = 5 * time.Second
)

// ServingState is what a child concludes from a serving session's
// heartbeat. Only ServingAlive counts as serving. The String forms are the
// servingState values pi logs in forwarded_permission.no_serving_session.
type ServingState int

// The states, in the order pi's judge tests for them.
const (
	// ServingAbsent: no record, or one that cannot be read or decoded
	// (including a pi 20.x parent, which writes none).
	ServingAbsent ServingState = iota
	// ServingDeadPID: the record's process does not exist.
	ServingDeadPID
	// ServingStale: the process exists but has not rewritten its record
	// for HeartbeatStaleAfter.
	ServingStale
	// ServingAlive: a live process rewrote its record recently.
	ServingAlive
)

// String is the state as pi's review log spells it.
func (s ServingState) String() string {
	switch s {
	case ServingAbsent:
		return "absent"
	case ServingDeadPID:
		return "dead_pid"
	case ServingStale:
		return "stale"
	case ServingAlive:
		return "alive"
	}
	return fmt.Sprintf("ServingState(%d)", int(s))
}

// Serving is the verdict on one session's heartbeat.
type Serving struct {
	// State is the classification.
	State ServingState
	// Heartbeat is the decoded record; zero when State is ServingAbsent.
	Heartbeat wire.Heartbeat
	// Err says why the record was absent or unusable, for a debug log;
	// pi reads silently, and so should a caller at normal verbosity.
	Err error
}

// CheckServing judges the heartbeat of session at time now, exactly in the
// order of pi's ForwardingLivenessJudge: a missing or unusable record is
// absent; else a pid that kill(pid, 0) cannot reach (any error but EPERM,
// which means the process exists under another uid) is dead_pid; else a
// record with now - updatedAt >= 5 s is stale; else alive. The error is
// non-nil only for a session id that cannot name a record.
func (l Layout) CheckServing(session string, now time.Time) (Serving, error) {
	path, err := l.HeartbeatPath(session)
	if err != nil {
		return Serving{}, err
	}
	return judgeHeartbeatFile(path, l.BrokerOwner(), now, processExists), nil
}

func judgeHeartbeatFile(path string, owner Owner, now time.Time, exists func(pid int) bool) Serving {
	data, err := ReadFileOf(path, owner)
	if err != nil {
		return Serving{State: ServingAbsent, Err: err}
	}
	h, err := wire.DecodeHeartbeat(data)
	if err != nil {
		return Serving{State: ServingAbsent, Err: fmt.Errorf("heartbeat %s: %w", path, err)}
	}
	if err := signalablePID(h.PID); err != nil {
		return Serving{State: ServingAbsent, Err: fmt.Errorf("heartbeat %s: %w", path, err)}
	}
	return Serving{State: judgeHeartbeat(h, now, exists), Heartbeat: h}
}

// judgeHeartbeat classifies a record that decoded, steps 2 to 4 of pi's
// judge.
func judgeHeartbeat(h wire.Heartbeat, now time.Time, exists func(pid int) bool) ServingState {
	if !exists(h.PID) {
		return ServingDeadPID
	}
	// now - updatedAt >= stale, written so a hostile updatedAt near
	// math.MinInt64 cannot overflow the subtraction.
	if h.UpdatedAt <= now.UnixMilli()-HeartbeatStaleAfter.Milliseconds() {
		return ServingStale
	}
	return ServingAlive
}

// signalablePID refuses a pid that kill(2) would not read as one process.
// DecodeHeartbeat has checked that it is a positive integer, but pid_t is
// 32 bits: a larger value would be truncated by the system call, and could
// become 0 or negative, which address process groups or every process.
func signalablePID(pid int) error {
	if pid <= 0 || pid > math.MaxInt32 {
		return fmt.Errorf("pid %d is not a process id", pid)
	}
	return nil
}

// processExists is kill(pid, 0): it delivers nothing and only asks
// whether pid names a process. EPERM means it exists but belongs to
// someone else, which for liveness still counts as existing.
// ProcessAlive reports whether a process with this pid exists (kill(pid, 0)
// succeeds or fails only with EPERM). A non-positive or out-of-range pid is
// never alive: it must not reach kill, where 0 and -n address groups.
func ProcessAlive(pid int) bool { return processExists(pid) }

func processExists(pid int) bool {
	if signalablePID(pid) != nil {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// HeartbeatPublisher keeps a serving session's heartbeat fresh, so that
// out-of-process children know someone drains the inbox and give up within
// about two seconds when nobody does.
type HeartbeatPublisher struct {
	// Layout locates the record.
	Layout Layout
	// Session is the serving session id.
	Session string
	// PID is written into the record; zero means this process.
	PID int
	// Now stamps updatedAt; nil means time.Now. Tests inject a clock.
	Now func() time.Time
	// ResponseBinding is announced in the record (Heartbeat.ResponseBinding):
	// BindingSHA256 when every response of this node is bound; empty
	// announces nothing, as pi's records do.
	ResponseBinding string
}

func (p *HeartbeatPublisher) pid() int {
	if p.PID != 0 {
		return p.PID
	}
	return os.Getpid()
}

func (p *HeartbeatPublisher) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Publish writes the record once, atomically, creating serving/ if needed.
func (p *HeartbeatPublisher) Publish() error {
	path, err := p.Layout.HeartbeatPath(p.Session)
	if err != nil {
		return err
	}
	session, err := NormalizeSessionID(p.Session)
	if err != nil {
		return err
	}
	data, err := wire.EncodeHeartbeat(wire.Heartbeat{SessionID: session, PID: p.pid(), UpdatedAt: p.now().UnixMilli(), ResponseBinding: p.ResponseBinding})
	if err != nil {
		return fmt.Errorf("publish heartbeat %s: %w", path, err)
	}
	if err := p.Layout.mkdir(filepath.Dir(path), true, isoDirMode); err != nil {
		return err
	}
	return p.Layout.WriteFile(path, data, WriteOptions{Mode: p.Layout.mailFileMode()})
}

// Withdraw deletes the record, which tells children at once that nobody
// serves. A record that now names another pid is left alone: a successor
// broker for the same session took over, and its record is not ours to
// remove.
func (p *HeartbeatPublisher) Withdraw() error {
	path, err := p.Layout.HeartbeatPath(p.Session)
	if err != nil {
		return err
	}
	if data, err := ReadFile(path); err == nil {
		if h, err := wire.DecodeHeartbeat(data); err == nil && h.PID != p.pid() {
			return nil
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("withdraw heartbeat: %w", err)
	}
	return nil
}

// Run publishes at once and then every interval (HeartbeatInterval if
// zero) until ctx is done, then withdraws the record and returns nil. A
// failed write does not stop it: the next tick tries again, and onError
// (if not nil) hears of each failure.
func (p *HeartbeatPublisher) Run(ctx context.Context, interval time.Duration, onError func(error)) error {
	if interval <= 0 {
		interval = HeartbeatInterval
	}
	report := func(err error) {
		if err != nil && onError != nil {
			onError(err)
		}
	}
	report(p.Publish())
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			report(p.Withdraw())
			return nil
		case <-t.C:
			report(p.Publish())
		}
	}
}

// SweepServing removes the heartbeat records of serving nodes that are
// gone: a pid that no longer exists, or a record that cannot be read or
// decoded. pi sweeps the same way once, at a store's first publish; a
// stale record of a live process is kept, since that process may resume.
// It returns how many records it removed.
func (l Layout) SweepServing() (int, error) {
	dir := l.ServingDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sweep heartbeats: %w", err)
	}
	removed := 0
	var errs []error
	for _, e := range entries {
		if !IsMailName(e.Name()) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		verdict := judgeHeartbeatFile(path, l.BrokerOwner(), time.Now(), processExists)
		if verdict.State != ServingAbsent && verdict.State != ServingDeadPID {
			continue
		}
		// A record that could not be read for an I/O reason (gone,
		// EACCES) is not proven garbage; one refused as unsafe or
		// undecodable is.
		if pe := (*fs.PathError)(nil); errors.As(verdict.Err, &pe) {
			continue
		}
		switch err := os.Remove(path); {
		case err == nil:
			removed++
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("sweep heartbeats: %w", err)
	}
	return removed, nil
}
