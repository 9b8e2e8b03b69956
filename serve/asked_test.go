package serve

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// TestDecisionEntriesRecordWhatWasAsked is issue 16 point 2: every entry
// of the broker that records a decision (auto_approved, auto_denied,
// approved, denied, the unavailable outcome, a session grant's approval)
// and the prompted entry say what was asked: the surface, the value as
// shown, the bash units the rules judged and the requester's cwd; the
// agent is requesterAgentName. Before, `grep -c 'make deploy'` on the log
// of a run that asked it was 0.
func TestDecisionEntriesRecordWhatWasAsked(t *testing.T) {
	term := newHeldTerminal()
	f, logPath := hardenedFixture(t, term)
	cases := []struct {
		name   string
		value  string
		answer *decision.Decision // the terminal's, nil when the rules decide
		events []string
		units  []string
	}{
		{name: "rule allows", value: "git status --short", events: []string{reviewlog.ForwardedAutoApproved, reviewlog.ForwardedApproved}, units: []string{"git status --short"}},
		{name: "rule denies", value: "sudo rm -rf /", events: []string{reviewlog.ForwardedAutoDenied, reviewlog.ForwardedDenied}, units: []string{"sudo rm -rf /"}},
		{name: "operator approves for the session", value: "make deploy && make test",
			answer: &decision.Decision{State: decision.StateApprovedForServingSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}},
			events: []string{reviewlog.ForwardedPrompted, reviewlog.ForwardedApproved}, units: []string{"make deploy", "make test"}},
		{name: "session grant approves", value: "make deploy && make test", events: []string{reviewlog.ForwardedAutoApproved, reviewlog.ForwardedApproved}, units: []string{"make deploy", "make test"}},
		{name: "nobody answers", value: "make publish",
			answer: func() *decision.Decision { d := decision.NobodyAnswered("the prompt timed out"); return &d }(),
			events: []string{reviewlog.ForwardedPrompted, reviewlog.ForwardedDenied}, units: []string{"make publish"}},
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		req := askWith(t, "child", c.value, []wire.SuggestedGrant{{Surface: "bash", Pattern: "make deploy"}, {Surface: "bash", Pattern: "make test"}})
		ids[i] = req.ID
		result := make(chan decision.Decision, 1)
		go func() { result <- f.client().Forward(t.Context(), req) }()
		if c.answer != nil {
			<-term.asked
			term.answer <- *c.answer
		}
		<-result
	}
	f.stop() // every entry is written once Run has returned
	for i, c := range cases {
		lines := linesOf(t, logPath, ids[i])
		for _, event := range c.events {
			line, ok := lines[event]
			if !ok {
				t.Errorf("%s: no %s line", c.name, event)
				continue
			}
			var units []string
			if err := json.Unmarshal(line[reviewlog.KeyUnits], &units); err != nil {
				t.Errorf("%s: %s: units: %v", c.name, event, err)
			}
			got := map[string]string{}
			for _, k := range []string{reviewlog.KeySurface, reviewlog.KeyValue, reviewlog.KeyRequesterCwd, reviewlog.KeyRequesterAgentName} {
				var s string
				_ = json.Unmarshal(line[k], &s)
				got[k] = s
			}
			want := map[string]string{"surface": "bash", "value": c.value, "requesterCwd": "/w", "requesterAgentName": "Explore"}
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(units, c.units) {
				t.Errorf("%s: %s records %v units %q, want %v units %q", c.name, event, got, units, want, c.units)
			}
		}
	}
}

// linesOf reads the review log's lines about request id, by event.
func linesOf(t *testing.T, path, id string) map[string]map[string]json.RawMessage {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	out := map[string]map[string]json.RawMessage{}
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		var lineID, event string
		_ = json.Unmarshal(m[reviewlog.KeyRequestID], &lineID)
		_ = json.Unmarshal(m["event"], &event)
		if lineID == id {
			out[event] = m
		}
	}
	return out
}

// TestCompactKeepsWhatWasAskedSmall: a request answered from the queue
// (compact) keeps what its review entries say was asked, but a few KiB of
// it however large the request, since the backlog of rule-resolved asks
// is not bounded in number.
func TestCompactKeepsWhatWasAskedSmall(t *testing.T) {
	huge := "ls " + strings.Repeat("é", 1<<19) // a megabyte, cut mid-rune if carelessly
	many := make([]string, 100)
	for i := range many {
		many[i] = "ls " + strconv.Itoa(i)
	}
	req := wire.Request{ID: "perm-1", Surface: "bash", Value: huge, AccessIntent: &wire.AccessIntent{Surface: "bash", MatchValues: append([]string{huge}, many...), RequesterCwd: "/w"}}
	c := compact(req)
	size := len(c.Value) + len(c.AccessIntent.RequesterCwd)
	for _, v := range c.AccessIntent.MatchValues {
		size += len(v)
		if !utf8.ValidString(v) {
			t.Errorf("a kept match value is not valid UTF-8: %q…", v[len(v)-8:])
		}
	}
	if size > (askedKeepValues+2)*askedKeepBytes {
		t.Errorf("compact keeps %d bytes of what was asked", size)
	}
	a := askedOf(&c)
	if a.Surface != "bash" || a.Cwd != "/w" || !strings.HasSuffix(a.Value, "…") || len(a.Units) != askedKeepValues || a.Units[1] != "ls 0" {
		t.Errorf("asked of the compact request: surface %q cwd %q value …%q, %d units", a.Surface, a.Cwd, a.Value[len(a.Value)-8:], len(a.Units))
	}
}
