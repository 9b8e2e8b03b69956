package filewatch

import (
	"testing"
	"time"
)

func TestTimingNext(t *testing.T) {
	const poll, rescan = 20 * time.Millisecond, 3 * time.Second
	for _, tc := range []struct {
		name   string
		timing Timing
		state  State
		want   time.Duration
	}{
		{"armed", Timing{Rescan: rescan, Poll: poll}, Armed, rescan},
		{"armed, default", Timing{}, Armed, DefaultRescan},
		{"armed, owner rescans", Timing{Rescan: -1, Poll: poll}, Armed, 0},
		{"not armed", Timing{Rescan: rescan, Poll: poll}, Unarmed, poll},
		{"not armed, default", Timing{}, Unarmed, DefaultPoll},
		{"not armed, rescan sooner than the poll", Timing{Rescan: poll, Poll: rescan}, Unarmed, poll},
		{"not armed, owner rescans", Timing{Rescan: -1, Poll: poll}, Unarmed, poll},
		{"awaiting the directory", Timing{Rescan: rescan, Poll: poll}, Awaiting, rescan},
		{"awaiting the directory, owner rescans", Timing{Rescan: -1, Poll: poll}, Awaiting, 0},
		{"polling", Timing{Rescan: rescan, Poll: poll}, Polling, poll},
		{"polling, owner rescans", Timing{Rescan: -1, Poll: poll}, Polling, poll},
		{"armed, nobody to drive the rescan", Timing{Rescan: -1, Poll: poll}.withOwnRescan(), Armed, DefaultRescan},
	} {
		if got := tc.timing.Next(tc.state); got != tc.want {
			t.Errorf("%s: Next = %v, want %v", tc.name, got, tc.want)
		}
	}
}
