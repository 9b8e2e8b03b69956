package natsbridge

import (
	"context"
	"sync"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/serve"
)

// released is a terminal that keeps every ask until release is closed,
// then denies it.
type released chan struct{}

func (r released) Decide(ctx context.Context, ask serve.Ask) decision.Decision {
	select {
	case <-r:
	case <-ctx.Done():
	}
	return decision.NobodyAnswered("released")
}

// bridgedCount counts the nats_request_bridged entries of id.
func (e *env) bridgedCount(id string) int {
	n := 0
	for _, l := range e.lines(reviewlog.NATSRequestBridged) {
		if l["requestId"] == id {
			n++
		}
	}
	return n
}

// A request published again (past the engine's duplicate window: here
// without a Nats-Msg-Id) while its answer is being published is not
// bridged a second time. The bridge used to look for the kept answer
// first and at its marker and the inbox after: an answer published and
// its files removed between the two looks made the request look new, and
// serve answered it twice. Seen failing: bridged 2 times.
func TestARepublishWhileTheAnswerIsPublishedIsNotBridgedAgain(t *testing.T) {
	e := newEnv(t)
	release := make(released)
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open)
	e.startServeWith(release)
	b := e.newBridge()
	req, data := request(t, "make deploy")
	b.afterKept = func(id string) {
		if id != req.ID || b.takes.Load() < 2 {
			return
		}
		// The second delivery found no kept answer: the answer is
		// published now, and its marker and files removed, before the
		// bridge looks at them.
		open()
		eventually(t, "the answer published and its marker dropped", func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.byID[req.ID] == nil && len(e.lines(reviewlog.NATSResponsePublished)) > 0
		})
	}
	e.startBridge(b)
	sub := e.listen(owner, req.ID)
	e.ask(owner, req.ID, data)
	eventually(t, "the ask bridged", func() bool { return e.bridgedCount(req.ID) == 1 })
	subject, _ := natsbox.RequestSubject(session, owner, req.ID)
	e.publish(subject, "", data)
	eventually(t, "the second publish taken", func() bool { return b.takes.Load() >= 2 && e.pending() == 0 })
	open()
	decode(t, answer(t, sub), req, data)
	eventually(t, "the answer published", func() bool { return len(e.lines(reviewlog.NATSResponsePublished)) >= 1 })
	if n := e.bridgedCount(req.ID); n != 1 {
		t.Fatalf("bridged %d times, want once", n)
	}
	if msg, err := sub.NextMsg(3 * sweepEvery); err == nil {
		t.Fatalf("a second answer: %s", msg.Data)
	}
}
