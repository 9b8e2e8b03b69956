package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
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

func TestRequesterGivingUpCancelsThePrompt(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	c := f.client()
	c.Timeout = 300 * time.Millisecond
	result := make(chan decision.Decision, 1)
	req := ask(t, "make deploy")
	go func() { result <- c.Forward(t.Context(), req) }()
	a := <-term.asked
	if a.Request.ID != req.ID {
		t.Fatalf("asked about %s", a.Request.ID)
	}
	if d := <-result; !d.Unavailable() {
		t.Fatalf("child: %+v", d)
	}
	// The broker notices the request is gone and releases the prompt
	// without writing a response.
	deadline := time.After(10 * time.Second)
	for {
		f.broker.mu.Lock()
		_, busy := f.broker.inflight[req.ID]
		f.broker.mu.Unlock()
		if !busy {
			break
		}
		select {
		case <-deadline:
			t.Fatal("the prompt for a departed child was never released")
		case <-time.After(5 * time.Millisecond):
		}
	}
	respPath, _ := f.layout.ResponsePath("parent", req.ID)
	if _, err := os.Lstat(respPath); err == nil {
		t.Error("a response was written for a child that left")
	}
}

// A decision kept after a failed write is dropped once its request is gone
// (the child gave up): before, it stayed in memory for the broker's life.
func TestUnwrittenAnswerOfAGoneRequestIsDropped(t *testing.T) {
	term := newHeldTerminal()
	f := newFixture(t, term)
	req := ask(t, "make deploy")
	data, _ := wire.EncodeRequest(req)
	path := writeRequest(t, f.layout, req.ID+".json", data)
	<-term.asked
	responses, _ := f.layout.ResponsesDir("parent")
	if err := os.RemoveAll(responses); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(responses, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	term.answer <- decision.Allow(provenance.User{Via: provenance.ViaDialog})
	unwritten := func() int {
		f.broker.mu.Lock()
		defer f.broker.mu.Unlock()
		return len(f.broker.unwritten)
	}
	for deadline := time.Now().Add(10 * time.Second); unwritten() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the failed write was not recorded")
		}
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); unwritten() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the decision of a request that is gone is still kept")
		}
	}
}

// Housekeeping removes every response older than the forwarding timeout,
// however many there are (listed a batch at a time), and keeps the
// recent ones.
func TestHousekeepingRemovesUncollectedResponsesPastOneBatch(t *testing.T) {
	now := time.Now()
	b := &Broker{
		Layout:            mailbox.Layout{Root: t.TempDir()},
		Session:           "parent",
		ForwardingTimeout: time.Minute,
		Now:               func() time.Time { return now },
		answered:          map[string]time.Time{},
	}
	if err := b.Layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	dir, err := b.Layout.ResponsesDir("parent")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const old, recent = 2*responsesBatch + 7, 5
	for i := range old + recent {
		path := filepath.Join(dir, fmt.Sprintf("perm-%05d.json", i))
		if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if i < old {
			stale := now.Add(-2 * time.Minute)
			if err := os.Chtimes(path, stale, stale); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.housekeeping()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != recent {
		t.Errorf("%d responses left, want the %d recent ones", len(entries), recent)
	}
	for _, e := range entries {
		if n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(e.Name(), "perm-"), ".json")); n < old {
			t.Errorf("%s, older than the forwarding timeout, was kept", e.Name())
		}
	}
}
