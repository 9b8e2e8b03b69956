package serve

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// notices collects what a broker's OnNotice hears.
type notices struct {
	mu    sync.Mutex
	lines []string
}

func (n *notices) add(s string) { n.mu.Lock(); n.lines = append(n.lines, s); n.mu.Unlock() }

func (n *notices) all() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.lines...)
}

// oldAsk is a pi 20.x child's request: display fields, no access facts.
func oldAsk(t *testing.T, agent, surface, value string) wire.Request {
	t.Helper()
	r := ask(t, value)
	r.AccessIntent = nil
	r.Surface = surface
	r.RequesterAgentName = agent
	return r
}

// forwardAnswering forwards req and, if it reaches the terminal, answers
// it with a user's denial; it returns the decision and the Ask the
// terminal saw (zero if none).
func forwardAnswering(t *testing.T, f *fixture, term *heldTerminal, req wire.Request, wantAsked bool) (decision.Decision, Ask) {
	t.Helper()
	asked := make(chan Ask, 1)
	if wantAsked {
		go func() {
			a := <-term.asked
			asked <- a
			term.answer <- decision.Deny("", provenance.User{Via: provenance.ViaDialog})
		}()
	}
	d := f.client().Forward(t.Context(), req)
	var a Ask
	if wantAsked {
		a = <-asked
	}
	return d, a
}

// The first request without access facts in a broker's run (a pi 20.x
// child's) tells the operator, on one line and in the review log, that
// the rules were not consulted, naming the agent, why, and the config key
// that would change it for bash; once per run for bash requests and once
// for the others. (Before issue 15 the operator was told nothing.)
func TestRequestWithoutAccessFactsIsNoticedOncePerRun(t *testing.T) {
	cases := []struct {
		name   string
		legacy bool
		// asks are sent in order: surface, value, whether it reaches
		// the terminal.
		asks []struct {
			surface, value string
			asked          bool
		}
		// want are substrings of each notice, in order.
		want [][]string
		// unwanted must be in no notice.
		unwanted []string
	}{
		{
			name: "display matching off",
			asks: []struct {
				surface, value string
				asked          bool
			}{
				{"bash", "git status", true},
				{"bash", "git status", true},
				{"read", "/etc/hosts", true},
				{"read", "/etc/passwd", true},
			},
			want: [][]string{
				{`agent "Old\nAgent\x1b[31m"`, `a "bash" request`, NoAccessFacts, `"legacyBashDisplayMatch": true`, "once per run"},
				{`agent "Old\nAgent\x1b[31m"`, `a "read" request`, NoAccessFacts},
			},
		},
		{
			name:   "display matching on",
			legacy: true,
			asks: []struct {
				surface, value string
				asked          bool
			}{
				{"bash", "git status", false}, // allowed by the rules on its display value
				{"bash", "make", true},        // asked by the rules on its display value
				{"read", "/etc/hosts", true},
			},
			want:     [][]string{{`a "read" request`, NoAccessFacts, "legacyBashDisplayMatch matches bash requests only"}},
			unwanted: []string{`"bash" request`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			term := newHeldTerminal()
			heard := &notices{}
			logPath := filepath.Join(t.TempDir(), "review.jsonl")
			log, err := reviewlog.Open(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, term, func(b *Broker) {
				b.LegacyBashDisplayMatch = c.legacy
				b.OnNotice = heard.add
				b.Log = log
			})
			for _, a := range c.asks {
				_, seen := forwardAnswering(t, f, term, oldAsk(t, "Old\nAgent\x1b[31m", a.surface, a.value), a.asked)
				if !a.asked {
					continue
				}
				// The terminal can tell an ask the rules never saw
				// (zero Resolution) from one they asked by display value.
				if byDisplay := c.legacy && a.surface == "bash"; (seen.Resolution.Action == rules.Ask) != byDisplay {
					t.Errorf("%s %q: terminal's Resolution %+v, consulted by display value %v", a.surface, a.value, seen.Resolution, byDisplay)
				}
			}
			// A request with access facts is no news.
			forwardAnswering(t, f, term, ask(t, "make"), true)
			f.stop()

			got := heard.all()
			if len(got) != len(c.want) {
				t.Fatalf("%d notices, want %d: %q", len(got), len(c.want), got)
			}
			for i, line := range got {
				if strings.ContainsAny(line, "\n\x1b") {
					t.Errorf("notice %d is not one clean line: %q", i, line)
				}
				for _, w := range c.want[i] {
					if !strings.Contains(line, w) {
						t.Errorf("notice %d %q lacks %q", i, line, w)
					}
				}
				for _, u := range c.unwanted {
					if strings.Contains(line, u) {
						t.Errorf("notice %d %q has %q", i, line, u)
					}
				}
			}
			data, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(data), "the rules were not consulted"); n != len(c.want) {
				t.Errorf("%d review entries of the notice, want %d:\n%s", n, len(c.want), data)
			}
		})
	}
}

func TestAuthorityFor(t *testing.T) {
	intent := &wire.AccessIntent{Surface: "bash", MatchValues: []string{"git status"}}
	cases := []struct {
		name               string
		req                wire.Request
		legacy             bool
		consulted, byValue bool
		why, hintSubstring string
	}{
		{"facts", wire.Request{Surface: "bash", Value: "x", AccessIntent: intent}, false, true, false, "", ""},
		{"facts, legacy", wire.Request{Surface: "bash", Value: "x", AccessIntent: intent}, true, true, false, "", ""},
		{"20.x bash", wire.Request{Surface: "bash", Value: "git status"}, false, false, false, NoAccessFacts, "legacyBashDisplayMatch"},
		{"20.x bash, legacy", wire.Request{Surface: "bash", Value: "git status"}, true, true, true, "", ""},
		{"20.x bash without a value, legacy", wire.Request{Surface: "bash"}, true, false, false, NoAccessFacts, "no display value"},
		{"20.x read", wire.Request{Surface: "read", Value: "/etc/hosts"}, false, false, false, NoAccessFacts, ""},
		{"20.x read, legacy", wire.Request{Surface: "read", Value: "/etc/hosts"}, true, false, false, NoAccessFacts, "bash requests only"},
	}
	for _, c := range cases {
		a := AuthorityFor(&c.req, c.legacy)
		if a.Consulted != c.consulted || a.ByDisplayValue != c.byValue || a.Why != c.why ||
			(c.hintSubstring == "") != (a.Hint == "") || !strings.Contains(a.Hint, c.hintSubstring) {
			t.Errorf("%s: %+v", c.name, a)
		}
	}
}
