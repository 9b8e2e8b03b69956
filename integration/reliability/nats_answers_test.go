package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/natsbox"
)

// natsAnswers: the real broker serving its file inbox and NATS together
// answers a NATS child exactly as it answers a file child, for the same
// asks (the built-in rules' allow and deny): same exit, state, reason and
// decidedBy nesting (forwarded → rule), one review entry each, the bridge's
// entries around the NATS one. First over an engine in the test process
// (--nats URL), then over the broker's own (--nats-listen), which has
// users: the children pass exactly the credentials the broker prints.
func (s *suite) natsAnswers(t *testing.T) {
	srv := singleServer(t)
	for _, mode := range []string{"nats", "nats-listen"} {
		t.Run(mode, func(t *testing.T) {
			r := s.newRig(t)
			log := filepath.Join(r.base, "review.jsonl")
			url := srv.ClientURL()
			var (
				b  *process
				js jetstream.JetStream
				// ask is one child ask over NATS.
				ask func(session, value string) answer
			)
			if mode == "nats" {
				b = r.natsBroker(log, "--nats", url, "--nats-local")
				r.serving(b)
				_, js = natsConn(t, url)
				ask = func(session, value string) answer {
					return r.natsAsk(t.Context(), url, session, value, 30*time.Second)
				}
			} else {
				port := freePort(t)
				url = "nats://127.0.0.1:" + strconv.Itoa(port)
				b = r.natsBroker(log, "--nats-listen", "127.0.0.1:"+strconv.Itoa(port),
					"--nats-store", filepath.Join(t.TempDir(), "jetstream"))
				r.serving(b)
				flags := printedChildFlags(t, b, url)
				js = natsConnAsLocal(t, url, flags)
				ask = func(session, value string) answer {
					return r.runAsk(t.Context(), value, append(append([]string{"ask"}, flags...),
						"--parent", "parent", "--session", session, "--agent", "Explore",
						"--surface", "bash", "--value", value, "--timeout", "30s"))
				}
			}
			r.natsServing(js, b)

			var natsAnswers []answer
			var natsTook, fileTook []time.Duration
			for i, value := range []string{natsAllow, natsDeny} {
				na := ask(fmt.Sprintf("n%d", i), value)
				fa := r.runAsk(t.Context(), value, []string{"ask", "--parent", "parent", "--session", fmt.Sprintf("f%d", i),
					"--agent", "Explore", "--surface", "bash", "--value", value, "--root", r.root, "--timeout", "30s"})
				natsAnswers = append(natsAnswers, na)
				natsTook = append(natsTook, na.took)
				fileTook = append(fileTook, fa.took)
				if !ruleAnswered(na) {
					t.Errorf("%q over NATS: exit %d %+v decidedBy %s\n%s\nbroker: %s", value, na.code, na.out, na.out.DecidedBy, na.stderr, b.stderr)
					continue
				}
				if !ruleAnswered(fa) {
					t.Errorf("%q over the file mailbox: exit %d %+v decidedBy %s\n%s", value, fa.code, fa.out, fa.out.DecidedBy, fa.stderr)
					continue
				}
				if na.code != fa.code || na.out.Approved != fa.out.Approved || na.out.State != fa.out.State ||
					na.reason() != fa.reason() || na.out.Unavailable != fa.out.Unavailable {
					t.Errorf("%q: NATS exit %d %+v, file exit %d %+v", value, na.code, na.out, fa.code, fa.out)
				}
				if !bytes.Equal(na.out.DecidedBy, fa.out.DecidedBy) {
					t.Errorf("%q: decidedBy over NATS %s, over the file mailbox %s", value, na.out.DecidedBy, fa.out.DecidedBy)
				}
			}
			b.stop(t)

			// The review log: one terminal entry per ask, the NATS one
			// bridged in and published back once, its decidedBy the
			// rule the child nested under forwarded.
			ev := reviewEvents(t, log)
			terminal := terminalEntries(t, log)
			var twice []string
			for _, a := range natsAnswers {
				id := a.out.RequestID
				if id == "" {
					continue
				}
				for _, event := range []string{"forwarded_permission.nats_request_bridged", "forwarded_permission.nats_response_published"} {
					if n := ev[event][id]; n != 1 {
						t.Errorf("%s: %d %s entries, want 1", id, n, event)
					}
				}
				if n := terminal[id]; n != 1 {
					t.Errorf("%s: %d terminal review entries, want 1", id, n)
				}
				if !loggedDecidedBy(t, log, id, a.out.DecidedBy) {
					t.Errorf("%s: the review log's decidedBy is not the one the child nested under forwarded (%s)", id, a.out.DecidedBy)
				}
			}
			for id, n := range terminal {
				if n > 1 {
					twice = append(twice, fmt.Sprintf("%s ×%d", id, n))
				}
			}
			tl := countAnswers(natsAnswers)
			figures(t, "asked", tl.asked, "answered", tl.answered, "lost", len(tl.lost), "twice", len(twice),
				"unavailable", tl.unavailable, "nats_allow", ms(natsTook[0]), "nats_deny", ms(natsTook[1]),
				"file_allow", ms(fileTook[0]), "file_deny", ms(fileTook[1]))
			check(t, tl, twice, false)
		})
	}
	t.Run("relay", s.natsRelay)
}

// printedChildFlags are the flags broker serve --nats-listen prints for a
// child of this host: the URL, the user local and its password file.
func printedChildFlags(t *testing.T, b *process, url string) []string {
	t.Helper()
	const prefix = "broker: a child on this host asks over NATS with: "
	for line := range strings.SplitSeq(b.stderr.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			flags := strings.Fields(rest)
			if len(flags) != 6 || flags[0] != "--transport" || flags[1] != url || flags[2] != "--nats-user" || flags[3] != "local" || flags[4] != "--nats-password-file" {
				t.Fatalf("the printed child flags %q: want --transport %s --nats-user local --nats-password-file FILE", flags, url)
			}
			return flags
		}
	}
	t.Fatalf("the broker printed no child flags:\n%s", b.stderr)
	return nil
}

// natsConnAsLocal connects as the child's user local with the printed
// flags (its inbox prefix, as the child's), for reading the heartbeat.
func natsConnAsLocal(t *testing.T, url string, flags []string) jetstream.JetStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	nc, err := natsbox.Connect(ctx, natsbox.Options{URL: url, User: flags[3], PasswordFile: flags[5], InboxPrefix: "_INBOX_" + flags[3], Name: "reliability-test"})
	if err != nil {
		t.Fatalf("connecting to %s as %s: %v", url, flags[3], err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// natsRelay: a broker that serves its file inbox relays what its rules
// leave to a human (--terminal relay) to its parent's broker over NATS
// (--relay-transport), as a laptop broker would to a team broker; the
// team broker's rules decide. The child's decidedBy keeps both hops:
// forwarded (parent) → forwarded (top) → rule.
func (s *suite) natsRelay(t *testing.T) {
	srv := singleServer(t)
	url := srv.ClientURL()
	_, js := natsConn(t, url)
	team := s.newRig(t)
	teamLog := filepath.Join(team.base, "review.jsonl")
	top := s.startCmd(t, team.command(t.Context(), "broker", "serve", "--session", "top", "--root", team.root,
		"--terminal", "deny", "--log", teamLog, "--nats", url, "--nats-local"))
	team.natsServingAs(js, top, "top")

	laptop := s.newRig(t)
	if err := os.WriteFile(laptop.config, []byte(`{"permission": {"*": "ask", "bash": {"*": "ask"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	laptopLog := filepath.Join(laptop.base, "review.jsonl")
	low := s.startCmd(t, laptop.command(t.Context(), "broker", "serve", "--session", "parent", "--root", laptop.root,
		"--config", laptop.config, "--log", laptopLog, "--terminal", "relay", "--parent", "top",
		"--relay-transport", url, "--relay-owner", "laptop", "--relay-local"))
	laptop.serving(low)

	var answers []answer
	for i, value := range []string{natsAllow, natsDeny} {
		a := laptop.runAsk(t.Context(), value, []string{"ask", "--parent", "parent", "--session", fmt.Sprintf("f%d", i),
			"--agent", "Explore", "--surface", "bash", "--value", value, "--root", laptop.root, "--timeout", "30s"})
		answers = append(answers, a)
		var hops struct {
			Kind               string `json:"kind"`
			ResponderSessionID string `json:"responderSessionId"`
			Decision           struct {
				Kind               string `json:"kind"`
				ResponderSessionID string `json:"responderSessionId"`
				Decision           struct {
					Kind    string `json:"kind"`
					Pattern string `json:"pattern"`
				} `json:"decision"`
			} `json:"decision"`
		}
		json.Unmarshal(a.out.DecidedBy, &hops)
		wantCode := map[string]int{natsAllow: 0, natsDeny: 1}[value]
		if a.code != wantCode || hops.Kind != "forwarded" || hops.ResponderSessionID != "parent" ||
			hops.Decision.Kind != "forwarded" || hops.Decision.ResponderSessionID != "top" || hops.Decision.Decision.Kind != "rule" {
			t.Errorf("%q relayed over NATS: exit %d (want %d) %+v decidedBy %s\n%s\nlaptop broker: %s\nteam broker: %s",
				value, a.code, wantCode, a.out, a.out.DecidedBy, a.stderr, low.stderr, top.stderr)
		}
	}
	low.stop(t)
	top.stop(t)
	ev := reviewEvents(t, teamLog)
	bridged := sum(ev["forwarded_permission.nats_request_bridged"])
	teamTerminal := sum(ev["forwarded_permission.approved"]) + sum(ev["forwarded_permission.denied"])
	laptopTerminal := terminalEntries(t, laptopLog)
	var twice []string
	for id, n := range laptopTerminal {
		if n > 1 {
			twice = append(twice, id)
		}
	}
	ok := 0
	for _, a := range answers {
		if a.code == 0 || a.code == 1 {
			ok++
		}
	}
	figures(t, "asked", len(answers), "answered", ok, "twice", len(twice), "team_bridged", bridged,
		"team_terminal", teamTerminal, "laptop_terminal", len(laptopTerminal), "allow_rtt", ms(answers[0].took), "deny_rtt", ms(answers[1].took))
	if bridged != len(answers) || teamTerminal != len(answers) || len(laptopTerminal) != len(answers) || len(twice) > 0 {
		t.Errorf("review entries: team bridged %d and decided %d, laptop decided %d (twice %v), for %d asks",
			bridged, teamTerminal, len(laptopTerminal), twice, len(answers))
	}
}

// loggedDecidedBy says whether the broker's terminal entry for id holds
// the decision that nested is the forwarded wrapper of.
func loggedDecidedBy(t *testing.T, log, id string, nested json.RawMessage) bool {
	t.Helper()
	var outer struct {
		Kind     string          `json:"kind"`
		Decision json.RawMessage `json:"decision"`
	}
	if json.Unmarshal(nested, &outer) != nil || outer.Kind != "forwarded" {
		return false
	}
	var want any
	json.Unmarshal(outer.Decision, &want)
	for _, line := range bytes.Split(readLog(t, log), []byte("\n")) {
		var e struct {
			Event     string          `json:"event"`
			RequestID string          `json:"requestId"`
			DecidedBy json.RawMessage `json:"decidedBy"`
		}
		if json.Unmarshal(line, &e) != nil || e.RequestID != id ||
			(e.Event != "forwarded_permission.approved" && e.Event != "forwarded_permission.denied") {
			continue
		}
		var got any
		json.Unmarshal(e.DecidedBy, &got)
		return reflect.DeepEqual(got, want)
	}
	return false
}

func readLog(t *testing.T, log string) []byte {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
