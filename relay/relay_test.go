package relay

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// logLine is one review-log line: its event and its details, which a
// line holds beside the event.
type logLine struct {
	Event   string
	Details map[string]any
}

func readLog(t *testing.T, path string) []logLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []logLine
	for l := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		event, _ := m["event"].(string)
		lines = append(lines, logLine{Event: event, Details: m})
	}
	return lines
}

// startBroker runs a broker on session until the test ends.
func startBroker(t *testing.T, b *serve.Broker) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run %s: %v", b.Session, err)
		}
	})
}

// A relaying broker's chain runs no links and defers; for each ask it
// relays it logs authorizer_chain_delegated with the links configured
// there, before the relay's own request_created, as pi does where an
// adjudicating node logs authorizer_chain_resolved. Nothing is logged
// when no link is configured. (Before issue 15 courier wrote no such
// entry: a relaying node's log did not say that its links never ran.)
func TestDelegationLogsEachRelayedAsk(t *testing.T) {
	for _, links := range [][]string{{"judge", "denylist"}, nil} {
		t.Run(strings.Join(links, ","), func(t *testing.T) {
			layout := mailbox.Layout{Root: t.TempDir()}
			cfg, err := rules.Parse("test.json", []byte(`{"permission": {"*": "ask"}}`))
			if err != nil {
				t.Fatal(err)
			}
			policy := func() *rules.Policy {
				p, err := rules.NewPolicy(cfg, rules.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			logPath := filepath.Join(t.TempDir(), "mid.jsonl")
			log, err := reviewlog.Open(logPath)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { log.Close() })

			startBroker(t, &serve.Broker{Layout: layout, Session: "top", Policy: policy(), SweepInterval: 20 * time.Millisecond})
			up := &forward.Client{Layout: layout, Log: log, Timeout: 30 * time.Second}
			t.Cleanup(up.Close)
			startBroker(t, &serve.Broker{
				Layout: layout, Session: "mid", Policy: policy(), Log: log, SweepInterval: 20 * time.Millisecond,
				Terminal: &Terminal{Forwarder: up, Session: "mid", Parent: "top"},
				Chain:    &Delegation{Links: links, Log: log, OnError: func(err error) { t.Error(err) }},
			})

			id, _ := forward.NewRequestID()
			req, err := forward.Ask{Session: "leaf", Agent: "Explore", Surface: "bash", Value: "make", Cwd: "/w"}.Request(id, "mid", time.Now().UnixMilli())
			if err != nil {
				t.Fatal(err)
			}
			d := (&forward.Client{Layout: layout, Timeout: 30 * time.Second}).Forward(t.Context(), req)
			// Decided two hops up (nobody at top): relayed, not judged here.
			mid, ok := d.DecidedBy.(provenance.Forwarded)
			if !ok {
				t.Fatalf("decidedBy %#v", d.DecidedBy)
			}
			if top, ok := mid.Decision.(provenance.Forwarded); !ok || *top.ResponderSessionID != "top" {
				t.Fatalf("not relayed to top: %#v", d.DecidedBy)
			}

			delegated, created := -1, -1
			for i, l := range readLog(t, logPath) {
				switch l.Event {
				case reviewlog.ChainDelegated:
					if delegated >= 0 {
						t.Errorf("a second %s entry", l.Event)
					}
					delegated = i
					got, _ := json.Marshal(l.Details["links"])
					want, _ := json.Marshal(links)
					if l.Details["requestId"] != id || string(got) != string(want) {
						t.Errorf("%s: %v, want requestId %s, links %s", l.Event, l.Details, id, want)
					}
				case reviewlog.ForwardedRequestCreated:
					created = i
				case reviewlog.ChainResolved, reviewlog.LinkVerdict:
					t.Errorf("a relaying node ran a chain: %s %v", l.Event, l.Details)
				}
			}
			switch {
			case created < 0:
				t.Fatal("the ask was not relayed")
			case links == nil && delegated >= 0:
				t.Error("delegated logged with no link configured")
			case links != nil && (delegated < 0 || delegated > created):
				t.Errorf("delegated at line %d, relay's request_created at %d: want it before", delegated, created)
			}
		})
	}
}

func TestNilDelegationDefers(t *testing.T) {
	var d *Delegation
	if _, decided := d.Resolve(t.Context(), forwardRequest(t)); decided {
		t.Fatal("decided")
	}
	// No log: nothing to write, nothing fails.
	if _, decided := (&Delegation{Links: []string{"x"}}).Resolve(t.Context(), forwardRequest(t)); decided {
		t.Fatal("decided")
	}
}

func forwardRequest(t *testing.T) wire.Request {
	t.Helper()
	req, err := forward.Ask{Session: "leaf", Agent: "Explore", Surface: "bash", Value: "make", Cwd: "/w"}.Request("1-a-1", "mid", time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	return req
}
