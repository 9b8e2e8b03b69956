package filewatch

import (
	"fmt"
	"time"
)

// Default intervals of a Timing.
const (
	// DefaultRescan bounds how long a file whose event was lost (an
	// overflow, a dropped watch) waits; an idle rescan costs microseconds.
	DefaultRescan = time.Second
	// DefaultPoll is pi's own cadence.
	DefaultPoll = 250 * time.Millisecond
)

// Timing says when a watcher looks at its directory again without an
// event. The zero value is the defaults.
type Timing struct {
	// Rescan is the safety rescan while a watch is armed; 0 means
	// DefaultRescan. A negative value leaves the safety rescan to the
	// watcher's owner, who asks for it from a timer it has anyway (a
	// broker's one-second tick then wakes the process once, where two
	// timers drift apart and wake it twice). Only a Dir has such an
	// owner; a File and a Shared take a negative value as the default.
	Rescan time.Duration
	// Poll is the cadence while no watch is armed: polling was chosen,
	// the directory does not exist (yet), or no inotify instance can be
	// had; 0 means DefaultPoll.
	Poll time.Duration
}

// State is what a watcher has to go on between two looks.
type State int

const (
	// Polling: events were not wanted; only the poll finds files.
	Polling State = iota
	// Armed: a watch is on the directory at the path.
	Armed
	// Unarmed: a watch is wanted but there is none: the directory is
	// missing, or no inotify instance or watch could be had.
	Unarmed
	// Awaiting: the directory is missing, and a watch on its nearest
	// existing ancestor tells when the way to it is made again, so no
	// poll is needed to find it (a pi child's cleanup removes a broker's
	// requests/ after every exchange).
	Awaiting
)

// String names the state.
func (s State) String() string {
	switch s {
	case Polling:
		return "polling"
	case Armed:
		return "armed"
	case Unarmed:
		return "unarmed"
	case Awaiting:
		return "awaiting"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// RescanInterval is the safety rescan interval, with its default.
func (t Timing) RescanInterval() time.Duration {
	if t.Rescan > 0 {
		return t.Rescan
	}
	return DefaultRescan
}

// PollInterval is the poll cadence, with its default.
func (t Timing) PollInterval() time.Duration {
	if t.Poll > 0 {
		return t.Poll
	}
	return DefaultPoll
}

// Next is the wait until the next look in state s: the safety rescan
// while a watch is armed or awaiting the directory (0, none, when the
// owner drives it), the poll cadence otherwise, and never longer than a
// rescan.
func (t Timing) Next(s State) time.Duration {
	switch {
	case s == Polling:
		return t.PollInterval()
	case s == Armed || s == Awaiting:
		if t.Rescan < 0 {
			return 0
		}
		return t.RescanInterval()
	case t.Rescan < 0:
		return t.PollInterval()
	}
	return min(t.PollInterval(), t.RescanInterval())
}

// withOwnRescan is t for a watcher that has nobody to drive its safety
// rescan (a File, a Shared): a negative Rescan means the default.
func (t Timing) withOwnRescan() Timing {
	if t.Rescan < 0 {
		t.Rescan = 0
	}
	return t
}
