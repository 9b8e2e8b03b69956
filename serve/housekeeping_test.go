package serve

import (
	"slices"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
)

// Housekeeping forgets the ids answered longer ago than the forwarding
// timeout and keeps the recent ones, from the front of the answer order.
func TestHousekeepingForgetsOldAnswers(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	now := start
	b := &Broker{
		Layout:            mailbox.Layout{Root: t.TempDir()},
		Session:           "parent",
		ForwardingTimeout: time.Minute,
		Now:               func() time.Time { return now },
		answered:          map[string]time.Time{},
	}
	answer := func(id string, at time.Time) {
		b.answered[id] = at
		b.answeredOrder = append(b.answeredOrder, answeredAt{id, at})
	}
	answer("old-1", start)
	answer("old-2", start.Add(10*time.Second))
	// "again" was forgotten once and answered again later: its first
	// place in the order must not forget the second answer.
	answer("again", start.Add(20*time.Second))
	delete(b.answered, "again")
	answer("recent", start.Add(50*time.Second))
	answer("again", start.Add(55*time.Second))

	now = start.Add(time.Minute + 30*time.Second) // cutoff: start+30s
	b.housekeeping()

	var kept []string
	for id := range b.answered {
		kept = append(kept, id)
	}
	slices.Sort(kept)
	if want := []string{"again", "recent"}; !slices.Equal(kept, want) {
		t.Errorf("answered after housekeeping: %v, want %v", kept, want)
	}
	if len(b.answeredOrder) != 2 || b.answeredOrder[0].id != "recent" {
		t.Errorf("answer order after housekeeping: %v", b.answeredOrder)
	}
}
