package serve

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// Attacks of the adversarial review of the isolation mode (issue 18,
// session 25), each the regression test of what it found.

// reviewAttackerUID is a second member of the ask group, not the victim.
const reviewAttackerUID = askerUID + 1

// A decision whose response could not be written is kept and written on
// the request's next delivery (TestFailedWriteIsRetriedWithoutAskingAgain).
// The requester may have rewritten its file by then: its own file, in a
// sticky inbox where it alone may. The operator answered the bytes it was
// shown; the grants of that answer must not be taken from other bytes, nor
// given to another uid that wrote the same bytes once the first requester
// gave up. Before the fix the kept decision was applied to whatever the
// file held: an approval of `make deploy` recorded the rewritten request's
// `rm *` as a grant (vouched for the subagent, or for the whole session),
// which nobody was ever asked about; and uid 61003 writing uid 61002's
// bytes got the grant vouched for itself. A group member can make the
// write fail by filling the mailbox's filesystem through tmp/.
func TestReviewKeptDecisionIsNotAppliedToRewrittenBytes(t *testing.T) {
	needRoot(t)
	const shown, rewritten = "make deploy", "rm -rf /srv/data"
	wholeSession := decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}}
	tests := []struct {
		name string
		d    decision.Decision
		// uid and value rewrite the request under its id.
		uid   int
		value string
	}{
		{"this subagent only, rewritten", forSubagent, askerUID, rewritten},
		{"whole session, rewritten", wholeSession, askerUID, rewritten},
		{"this subagent only, the same bytes from another uid", forSubagent, reviewAttackerUID, shown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout := isolatedLayout(t)
			term := newHeldTerminal()
			req := askWith(t, "child", shown, nil)
			path, _ := layout.RequestPath("parent", req.ID)
			sawRewrite := make(chan struct{})
			var once sync.Once
			f, _ := loggedFixture(t, layout, testConfig, term, func(b *Broker) {
				b.beforeResponse = func(got *wire.Request, _ decision.Decision) {
					fi, err := os.Stat(path)
					if got.Value == tt.value && err == nil && int(fi.Sys().(*syscall.Stat_t).Uid) == tt.uid {
						once.Do(func() { close(sawRewrite) })
					}
				}
			})
			dropAs(t, f.layout, askerUID, req)
			<-term.asked

			responses, _ := f.layout.ResponsesDir("parent")
			blockDir(t, responses)
			term.answer <- tt.d
			waitUnwritten(t, f.broker, 1)

			other := req
			if tt.value != shown {
				other = askWith(t, "child", tt.value, nil)
				other.ID = req.ID
			}
			rewriteAs(t, f.layout, tt.uid, other)
			select {
			case <-sawRewrite:
			case <-time.After(30 * time.Second):
				t.Fatal("the rewritten request was not delivered again within 30s")
			}
			unblockDir(t, responses)
			resp := awaitResponse(t, f.layout, req.ID)
			f.stop()

			if tt.value != shown {
				for _, g := range f.broker.Policy.Sessions().Grants() {
					if strings.Contains(g.Pattern, "rm") {
						t.Errorf("whole-session grant %v recorded from bytes nobody was shown", g)
					}
				}
			}
			j, err := grants.OpenVouched(layout, tt.uid, "child")
			if err != nil {
				t.Fatal(err)
			}
			held := rules.NewSessionRules("")
			if err := j.Load(held); err != nil {
				t.Fatal(err)
			}
			for _, g := range held.Grants() {
				if strings.Contains(g.Pattern, "rm") || tt.uid != askerUID {
					t.Errorf("vouched grant %v for uid %d, from bytes nobody was shown it", g, tt.uid)
				}
			}
			if resp.Approved {
				t.Errorf("the rewritten request was answered approved: %+v", resp)
			}
		})
	}
}

// The per-requester bound counts asks by the session a request claims. In
// the isolation mode a requester is a uid first: another member of the ask
// group claiming the victim's session id must not use up the victim's
// bound. Before the fix uid 61003's two held asks under the session
// "victim" made uid 61002's own ask from that session unavailable.
func TestReviewAnotherUIDCannotFillARequestersBound(t *testing.T) {
	needRoot(t)
	layout := isolatedLayout(t)
	q := newQueueTerminal()
	f, _ := loggedFixture(t, layout, testConfig, q, func(b *Broker) {
		b.MaxPendingPerRequester, b.MaxPending = 2, 10
	})
	for _, id := range []string{"flood-1", "flood-2"} {
		dropAs(t, f.layout, reviewAttackerUID, request(t, id, "victim", "make deploy"))
		q.waitAsked(t, 1)
	}
	victim := request(t, "victim-1", "victim", "make deploy")
	dropAs(t, f.layout, askerUID, victim)
	if answer := heldOrAnswered(t, f, q, victim); answer != nil {
		t.Errorf("the victim's ask was not held but answered: %s", answer)
	}
	f.stop()
}

// One uid claiming as many session ids as the bound in all allows must not
// fill it: every other user's asks would be answered unavailable until the
// flood concluded. In the isolation mode a uid holds at most half the
// bound in all (fairQueue.admit, uidShare); past it its own asks are
// refused, and another uid's ask is still held.
func TestOneUIDCannotFillTheGlobalBound(t *testing.T) {
	needRoot(t)
	layout := isolatedLayout(t)
	q := newQueueTerminal()
	f, _ := loggedFixture(t, layout, testConfig, q, func(b *Broker) {
		b.MaxPendingPerRequester, b.MaxPending = 2, 4
	})
	// Two sessions of two asks: the first two are held, which is the
	// uid's share; the other two are refused for it.
	var flood []wire.Request
	for i, session := range []string{"a", "a", "b", "b"} {
		req := request(t, fmt.Sprintf("flood-%d", i), session, "make deploy")
		flood = append(flood, req)
		dropAs(t, f.layout, reviewAttackerUID, req)
		if i < 2 {
			q.waitAsked(t, 1)
		}
	}
	for _, req := range flood[2:] {
		if answer := heldOrAnswered(t, f, q, req); answer == nil || !bytes.Contains(answer, []byte("asks from this user are already waiting")) {
			t.Errorf("uid %d's ask %s past its share: %s, want answered unavailable for the user's share", reviewAttackerUID, req.ID, answer)
		}
	}
	victim := request(t, "victim-1", "victim", "make deploy")
	dropAs(t, f.layout, askerUID, victim)
	if answer := heldOrAnswered(t, f, q, victim); answer != nil {
		t.Errorf("uid %d's only ask was not held but answered while uid %d held its share: %s", askerUID, reviewAttackerUID, answer)
	}
	f.stop()
}

// heldOrAnswered waits until req is held by q (nil) or answered (the
// answer's bytes), whichever comes first.
func heldOrAnswered(t *testing.T, f *fixture, q *queueTerminal, req wire.Request) []byte {
	t.Helper()
	path, _ := f.layout.ResponsePath("parent", req.ID)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		select {
		case id := <-q.asked:
			if id != req.ID {
				t.Fatalf("held %s, want %s", id, req.ID)
			}
			return nil
		default:
		}
		if data, err := mailbox.ReadFileOf(path, f.layout.BrokerOwner()); err == nil {
			return data
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was neither held nor answered within 30s", req.ID)
		}
	}
}

// rewriteAs replaces the request file of req.ID with req as uid would:
// staged, given to uid, renamed over its own file. Unlike dropAs it does
// not ensure the inbox, whose responses/ a test may have blocked.
func rewriteAs(t *testing.T, layout mailbox.Layout, uid int, req wire.Request) {
	t.Helper()
	data, err := wire.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	staged := filepath.Join(t.TempDir(), req.ID+".json")
	if err := os.WriteFile(staged, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(staged, uid, -1); err != nil {
		t.Fatal(err)
	}
	path, err := layout.RequestPath("parent", req.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(staged, path); err != nil {
		t.Fatal(err)
	}
}

// blockDir puts a file where the directory dir was, so that a write into
// it fails (ENOTDIR), as a full filesystem would make it fail.
func blockDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// unblockDir removes blockDir's file: the broker makes the directory again.
func unblockDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
}

// waitUnwritten waits until the broker keeps n decisions it could not write.
func waitUnwritten(t *testing.T, b *Broker, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b.mu.Lock()
		got := len(b.unwritten)
		b.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d decisions kept unwritten, want %d", got, n)
		}
	}
}
