package prompt

import (
	"fmt"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
)

// What the prompt remembers of the asks that left it: the last few, one
// line each above the frame (when, how, who and what), so that the next
// ask never wipes out the trace of the answer just given; and the count of
// every decision of the broker's run, the rules' and the session grants'
// included (serve.Tally), on the idle line.

// recentAnswers is how many past asks the frame shows.
const recentAnswers = 3

// record is one ask that left the screen.
type record struct {
	at time.Time
	// how says how it left: the answer, or why it left unanswered.
	how string
	// what names the ask ("'reviewer' git push"), clean.
	what string
}

// remember keeps r as the newest of the recent asks.
func (m *machine) remember(r record) {
	if len(m.recent) == recentAnswers {
		copy(m.recent, m.recent[1:])
		m.recent = m.recent[:recentAnswers-1]
	}
	m.recent = append(m.recent, r)
}

// howAnswered says in a few words what the operator answered.
func howAnswered(d decision.Decision) string {
	switch d.State {
	case decision.StateApproved:
		return "yes, once"
	case decision.StateApprovedForSession:
		return "yes, for this session (this subagent only)"
	case decision.StateApprovedForServingSession:
		n := len(d.Grants)
		if n == 0 {
			return "yes, for the whole session"
		}
		return fmt.Sprintf("yes, for the whole session (%d edited grants)", n)
	case decision.StateDeniedWithReason:
		return "no: " + cut(Clean(d.DenialReason, 0), 40)
	}
	return "no"
}

// recentLines are the recent asks, oldest first, one line each.
func (m *machine) recentLines(width int) []line {
	out := make([]line, 0, len(m.recent))
	for _, r := range m.recent {
		text := fmt.Sprintf("  %s  %s · %s", r.at.Format("15:04:05"), r.how, r.what)
		out = append(out, line{text: cut(text, width)})
	}
	return out
}

// tally counts the decisions of the broker's run, by who decided.
type tally struct {
	// you are the operator's answers at this prompt.
	you int
	// by counts the others' decisions by kind (serve.Tally tells them).
	by map[provenance.Kind]int
}

// add counts a decision the broker made without this prompt.
func (t *tally) add(by provenance.Source) {
	if t.by == nil {
		t.by = map[provenance.Kind]int{}
	}
	t.by[by.Kind()]++
}

// tallyOrder and tallyLabel name the deciders on the idle line.
var (
	tallyOrder = []provenance.Kind{
		provenance.KindRule, provenance.KindSessionApproval, provenance.KindAuthorizer,
		provenance.KindForwarded, provenance.KindYolo, provenance.KindInfrastructureRead, provenance.KindGateError,
	}
	tallyLabel = map[provenance.Kind]string{
		provenance.KindRule:               "by a rule",
		provenance.KindSessionApproval:    "by a session grant",
		provenance.KindAuthorizer:         "by the authorizer chain",
		provenance.KindForwarded:          "relayed",
		provenance.KindYolo:               "by yolo",
		provenance.KindInfrastructureRead: "as infrastructure reads",
		provenance.KindGateError:          "failed (gate error)",
	}
)

// String is the count on the idle line: "5 answered · 1 unanswered";
// the unanswered are left out when there are none.
func (t tally) String() string {
	total := t.you
	for _, k := range tallyOrder {
		total += t.by[k]
	}
	s := fmt.Sprintf("%d answered", total)
	if n := t.by[provenance.KindUnavailable]; n > 0 {
		s += fmt.Sprintf(" · %d unanswered", n)
	}
	return s
}

// breakdown says who answered: "2 by you, 3 by a rule"; "" when only the
// operator did.
func (t tally) breakdown() string {
	var parts []string
	for _, k := range tallyOrder {
		if n := t.by[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, tallyLabel[k]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%d by you, %s", t.you, strings.Join(parts, ", "))
}
