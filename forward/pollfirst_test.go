package forward

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/internal/filewatch"
	"github.com/seed6639df8c/courier/mailbox"
)

// With PollFirst, Forward keeps every guarantee it gives without: the
// answer nested, a cancel or timeout withdrawing the request, a plant or a
// forged answer refused while the parent's own answer is awaited, an
// unreadable answer ending the ask as unavailable, the request removed
// before the answer. The same tests, with a first look.
// (TestForwardWithoutInotifyInstances is not among them: with a first look
// a quick answer never asks for an instance, so there is no failure to
// report.)
func TestPollFirstKeepsTheGuarantees(t *testing.T) {
	testPollFirst = OneShotPollFirst
	t.Cleanup(func() { testPollFirst = 0 })
	for name, test := range map[string]func(*testing.T){
		"nests the answer":               TestForwardNestsTheAnswer,
		"gives up when cancelled":        TestForwardGivesUpWhenCancelled,
		"times out":                      TestForwardTimesOut,
		"refuses a plant":                TestForwardRefusesAPlantAndWaitsForTheAnswer,
		"unreadable answer":              TestForwardUnreadableAnswer,
		"refuses forged answers":         TestForwardRefusesForgedAnswers,
		"rereads a replaced plant":       TestForwardRereadsAnAnswerThatReplacedTheRefusedPlant,
		"refuses replaced request bytes": TestForwardRefusesAnAnswerToReplacedRequestBytes,
		"removes the request first":      TestForwardRemovesTheRequestBeforeTheAnswer,
		"sticky binding":                 TestStickyBindingAnnouncedBeforeThePlant,
		"sticky binding, planted denial": TestStickyBindingPlantedDenial,
		"polling":                        TestForwardPolling,
		"replaced directory":             TestForwardFindsTheAnswerInAReplacedDirectory,
		"parent not serving":             TestForwardGivesUpOnAParentNotServing,
	} {
		t.Run(name, test)
	}
}

// An answer that comes within PollFirst is taken without any inotify
// instance: the exit of a one-ask process then waits for no watch's
// teardown.
func TestPollFirstNeedsNoWatchForAQuickAnswer(t *testing.T) {
	inits := countInits(t)
	layout := mailbox.Layout{Root: t.TempDir()}
	serveAll(t, layout, "parent")
	// A window far beyond any answer's time, so that a loaded machine
	// cannot make the answer late: the figure is the count, not the time.
	c := &Client{Layout: layout, Timeout: time.Minute, PollFirst: time.Minute}
	t.Cleanup(c.Close)
	for i := range 3 {
		req := askTo(t, "perm-quick-"+string(rune('a'+i)), "parent")
		if d := c.Forward(t.Context(), req); !d.Approved() {
			t.Fatalf("ask %d: decision = %+v", i, d)
		}
	}
	if n := inits.Load(); n != 0 {
		t.Errorf("%d inotify instances, want none", n)
	}
}

// An answer that comes after the first look is awaited with the watch,
// armed once the look is over.
func TestPollFirstArmsTheWatchForALateAnswer(t *testing.T) {
	armed := make(chan struct{})
	var inits atomic.Int32
	open := openInotify
	openInotify = func() (*filewatch.Inotify, error) {
		if inits.Add(1) == 1 {
			close(armed)
		}
		return open()
	}
	t.Cleanup(func() { openInotify = open })
	c, req := newClient(t)
	c.PollFirst = time.Millisecond
	serveWith(t, c, func(id string) {
		// The parent answers only once the first look is over.
		select {
		case <-armed:
		case <-time.After(time.Minute):
			t.Error("the watch was never armed")
		}
		answerBound(t, c.Layout, "parent", id, response(true))
	})
	if d := c.Forward(t.Context(), req); !d.Approved() {
		t.Fatalf("decision = %+v", d)
	}
	if n := inits.Load(); n != 1 {
		t.Errorf("%d inotify instances, want 1", n)
	}
	assertNoMail(t, c)
}

// An answer that lands between the first look's last lstat and the
// arming of the watch signals nothing: Forward must look once more after
// arming. Here it lands while the inotify instance is being made, and the
// watch's safety rescan is an hour away; without the second look the
// answer would be found only when the ask times out (its last look).
func TestPollFirstLooksAgainOnceArmed(t *testing.T) {
	c, req := newClient(t)
	c.PollFirst = time.Millisecond
	c.Timeout = 30 * time.Second
	c.Watch.RescanInterval = time.Hour
	if err := c.Layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	open := openInotify
	openInotify = func() (*filewatch.Inotify, error) {
		in, err := open()
		answerBound(t, c.Layout, "parent", req.ID, response(true))
		return in, err
	}
	t.Cleanup(func() { openInotify = open })
	start := time.Now()
	if d := c.Forward(t.Context(), req); !d.Approved() {
		t.Fatalf("decision = %+v", d)
	}
	if took := time.Since(start); took > c.Timeout/3 {
		t.Errorf("the answer was taken after %s, as the ask timed out", took)
	}
	assertNoMail(t, c)
}

// An inbox that cannot be made ends the ask with pi's sentence for it,
// before anything is written, with a first look or without.
func TestInboxThatCannotBeMade(t *testing.T) {
	for _, pollFirst := range []time.Duration{0, OneShotPollFirst} {
		c, req := newClient(t)
		c.PollFirst = pollFirst
		// A file where the sessions directory should be.
		if err := os.WriteFile(c.Layout.SessionsDir(), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		d := c.Forward(t.Context(), req)
		want := "Permission forwarding directories could not be prepared for session 'parent'"
		if !d.Unavailable() || d.DenialReason != want {
			t.Errorf("PollFirst %s: decision = %+v, want unavailable: %q", pollFirst, d, want)
		}
	}
}

// OnLongWait is called once, during the first look, when the answer does
// not come in its fast phase (the look itself lasts a minute here); without
// PollFirst, once the request is written, before any answer. cmd/child arms its handling
// of Ctrl-C there, which a quick answer never pays for.
func TestOnLongWaitIsCalledOnceWhenTheAnswerIsNotQuick(t *testing.T) {
	for _, pollFirst := range []time.Duration{0, time.Minute} {
		t.Run(fmt.Sprint("PollFirst ", pollFirst), func(t *testing.T) {
			var calls atomic.Int32
			long := make(chan struct{})
			c, req := newClient(t)
			c.PollFirst = pollFirst
			c.OnLongWait = func() {
				if calls.Add(1) == 1 {
					close(long)
				}
			}
			serveWith(t, c, func(id string) {
				// The parent answers only once the wait is long: the
				// call must come without any answer to wait for.
				select {
				case <-long:
				case <-time.After(time.Minute):
					t.Error("OnLongWait was never called")
				}
				answerBound(t, c.Layout, "parent", id, response(true))
			})
			if d := c.Forward(t.Context(), req); !d.Approved() {
				t.Fatalf("decision = %+v", d)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("OnLongWait called %d times, want once", n)
			}
		})
	}
}

// An answer that comes within the first look's fast phase never calls
// OnLongWait. The phase is made a minute long here, so that a loaded
// machine cannot make the answer late: the figure is the count.
func TestOnLongWaitIsNotCalledForAQuickAnswer(t *testing.T) {
	fast := fastFor
	fastFor = time.Minute
	t.Cleanup(func() { fastFor = fast })
	layout := mailbox.Layout{Root: t.TempDir()}
	serveAll(t, layout, "parent")
	var calls atomic.Int32
	c := &Client{Layout: layout, Timeout: 2 * time.Minute, PollFirst: 2 * time.Minute, OnLongWait: func() { calls.Add(1) }}
	t.Cleanup(c.Close)
	for i := range 3 {
		req := askTo(t, "perm-quick-long-"+string(rune('a'+i)), "parent")
		if d := c.Forward(t.Context(), req); !d.Approved() {
			t.Fatalf("ask %d: decision = %+v", i, d)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("OnLongWait called %d times for quick answers, want none", n)
	}
}

// A caller's ctx that ends with the ask's Deadline (child hook gives its
// event and each ask the same --timeout) ends the ask as timed out,
// naming Timeout, never as "the session ended": both become ready at
// once, and which one select took was chance (a hook that nobody
// answered said "the session ended" in 4 of 8 runs).
func TestACallersDeadlineIsTheAsksTimeout(t *testing.T) {
	for _, pollFirst := range []time.Duration{0, OneShotPollFirst} {
		t.Run(fmt.Sprint("PollFirst ", pollFirst), func(t *testing.T) {
			for i := range 5 {
				c, req := newClient(t)
				req.ID = fmt.Sprintf("perm-deadline-%d", i)
				c.PollFirst = pollFirst
				if err := c.Layout.EnsureInbox("parent"); err != nil {
					t.Fatal(err)
				}
				const timeout = 200 * time.Millisecond
				c.Timeout = timeout
				deadline := time.Now().Add(20 * time.Millisecond)
				c.Deadline = deadline
				ctx, cancel := context.WithDeadline(t.Context(), deadline)
				d := c.Forward(ctx, req)
				cancel()
				if want := NoAnswerReason("parent", timeout); !d.Unavailable() || d.DenialReason != want {
					t.Fatalf("ask %d: decision = %+v, want unavailable: %s", i, d, want)
				}
			}
		})
	}
}
