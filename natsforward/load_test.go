package natsforward

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestWaitingAsksLoadTheEngineLightly counts the engine requests (direct
// gets: heartbeat reads and kept-answer look-ups) that asks waiting on a
// human make, with the Client's defaults: a waiting ask must cost the
// engine about one request a second (the heartbeat is written once a
// second), not twenty. The figure is logged per waiting ask.
func TestWaitingAsksLoadTheEngineLightly(t *testing.T) {
	// Waits on timers, not the CPU: run beside the other slow waits.
	t.Parallel()
	if testing.Short() {
		t.Skip("waits several seconds")
	}
	e := startEngine(t, t.TempDir(), -1)
	b := newFakeBroker(t, e, parent)
	b.heartbeat(true)
	// The heartbeat stays fresh for the whole window, as a live broker's.
	stopBeat := make(chan struct{})
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopBeat:
				return
			case <-tick.C:
				b.heartbeat(true)
			}
		}
	}()
	defer func() { close(stopBeat); <-beatDone }()

	counter := dial(t, e.url)
	var gets atomic.Int64
	if _, err := counter.Subscribe("$JS.API.DIRECT.GET.>", func(*nats.Msg) { gets.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if err := counter.Flush(); err != nil {
		t.Fatal(err)
	}

	const asks = 10
	const window = 4 * time.Second
	c, _ := newClient(t, e)
	c.Timeout = time.Minute
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{}, asks)
	for range asks {
		go func() {
			c.Forward(ctx, askLs(t))
			done <- struct{}{}
		}()
	}
	for range asks {
		b.next()
	}
	// Past the first look-ups of each ask, then a window of waiting.
	time.Sleep(1500 * time.Millisecond) // a measurement window, not a wait for an event
	start := gets.Load()
	time.Sleep(window) // a measurement window, not a wait for an event
	n := gets.Load() - start
	cancel()
	for range asks {
		select {
		case <-done:
		case <-time.After(testWait):
			t.Fatal("Forward did not return once cancelled")
		}
	}
	perAsk := float64(n) / float64(asks) / window.Seconds()
	t.Logf("%d direct gets in %s for %d waiting asks: %.2f requests/s per waiting ask (%.0f/s for 100)", n, window, asks, perAsk, perAsk*100)
	if perAsk > 2 {
		t.Errorf("%.2f engine requests/s per waiting ask, want at most 2", perAsk)
	}
}
