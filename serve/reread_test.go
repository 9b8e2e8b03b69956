package serve

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// capturingHolder hands each ask it is given to asks and keeps nothing.
type capturingHolder struct{ asks chan Ask }

func (*capturingHolder) Decide(context.Context, Ask) decision.Decision {
	panic("the broker holds asks at a Holder")
}

func (h *capturingHolder) Hold(a *Ask, _ func(decision.Decision)) func(error) {
	h.asks <- *a
	return func(error) {}
}

// rereadBroker is a Broker ready to take request files as Run makes it,
// without Run's goroutines: the test runs intake and the jobs itself.
func rereadBroker(t *testing.T, term Terminal) (*Broker, mailbox.Layout) {
	t.Helper()
	layout := mailbox.Layout{Root: t.TempDir()}
	cfg, err := rules.Parse("test.json", []byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{layout.Root}})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	requests, err := layout.RequestsDir("parent")
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{Layout: layout, Session: "parent", Policy: policy, Terminal: term, OnError: func(err error) { t.Logf("broker: %v", err) }}
	b.prepare()
	b.watcher = mailbox.NewWatcher(requests, b.watchOptions())
	return b, layout
}

// An ask waiting for its turn keeps no payload; its turn reads the file
// again. The same bytes are escalated whole; a file gone is a child that
// gave up; other bytes under the name are refused, never decided.
func TestEscalationRereadsItsRequestInItsTurn(t *testing.T) {
	for _, tc := range []string{"same", "gone", "rewritten"} {
		t.Run(tc, func(t *testing.T) {
			h := &capturingHolder{asks: make(chan Ask, 1)}
			b, layout := rereadBroker(t, h)
			req := request(t, "reread-"+tc, "agent", "make deploy")
			data, err := wire.EncodeRequest(req)
			if err != nil {
				t.Fatal(err)
			}
			data = withPayload(data, 64<<10)
			path := writeRequest(t, layout, req.ID+".json", data)

			o, key, j := b.intake(context.Background(), req.ID+".json")
			if o != queued || j == nil {
				t.Fatalf("intake: %v, job %t; want a queued escalation", o, j != nil)
			}
			if mine, _ := b.fair.waiting(key); mine != 1 {
				t.Fatalf("%d asks waiting, want 1", mine)
			}
			var other []byte
			switch tc {
			case "gone":
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			case "rewritten":
				changed := req
				changed.Value = "make deploy --force"
				enc, err := wire.EncodeRequest(changed)
				if err != nil {
					t.Fatal(err)
				}
				other = withPayload(enc, 64<<10)
				if err := os.WriteFile(path, other, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			j() // an escalation it starts is held on a goroutine of its own

			switch tc {
			case "same":
				a := <-h.asks
				if len(a.Request.Payload) < 64<<10-64 || a.Request.Message != req.Message {
					t.Errorf("the terminal got a payload of %d B and message %q; want the request read again whole", len(a.Request.Payload), a.Request.Message)
				}
				noResponse(t, layout, req)
				return
			case "gone":
				noResponse(t, layout, req)
			case "rewritten":
				resp := readResponse(t, layout, req)
				if resp.Approved || !strings.Contains(resp.DenialReason, "rewritten while it waited") {
					t.Errorf("answered approved=%t %q; want unavailable, rewritten", resp.Approved, resp.DenialReason)
				}
				if want := wire.RequestDigest(other); resp.RequestSHA256 != want {
					t.Errorf("the refusal is bound to %s, want the bytes now there (%s)", resp.RequestSHA256, want)
				}
				if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("the rewritten request is still there: %v", err)
				}
			}
			select {
			case a := <-h.asks:
				t.Errorf("the terminal was asked %s", a.Request.ID)
			default:
			}
			b.mu.Lock()
			inflight := len(b.inflight)
			b.mu.Unlock()
			if inflight != 0 {
				t.Errorf("%d requests still in flight", inflight)
			}
			if mine, all := b.fair.waiting(key); mine != 0 || all != 0 {
				t.Errorf("%d (%d in all) asks still counted as waiting", mine, all)
			}
		})
	}
}
