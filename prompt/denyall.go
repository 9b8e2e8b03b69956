package prompt

import (
	"fmt"
	"time"

	"github.com/seed6639df8c/courier/decision"
)

// Denying all of one requester's asks at once (D, from the first choice):
// the operator facing a flood from one subagent answers its asks in one
// step, after a confirmation that says how many it denies. It denies the
// ask on screen and every ask of the same requester that was waiting when
// D was pressed, never one that arrived after; each is a user's denial
// with reasonDenyAll.

// reasonDenyAll is the reason each ask denied together hears.
const reasonDenyAll = "Denied by the operator with every request waiting from this session"

// startDenyAll asks to confirm denying the asks of the requester on screen.
func (m *machine) startDenyAll() {
	m.stage, m.denyUpTo = stageDenyAll, m.q.seq
}

// denyAllCount is how many asks the deny-all being confirmed would deny,
// the one on screen included.
func (m *machine) denyAllCount() int {
	return 1 + m.q.waitingUpTo(m.cur.owner, m.denyUpTo)
}

func (m *machine) pressDenyAll(k key, now time.Time) []answer {
	switch {
	case k.Code == keyRune && (k.Rune == 'y' || k.Rune == 'Y'):
		e := m.cur
		d := decision.Deny(reasonDenyAll, Decider)
		taken := m.q.takeUpTo(e.owner, m.denyUpTo, e.owner)
		out := make([]answer, 0, len(taken)+1)
		for _, t := range taken {
			t.queued = false
			out = append(out, answer{t, d})
		}
		m.tally.you += len(taken)
		out = append(out, m.conclude(d, now)...)
		m.recent[len(m.recent)-1].how = fmt.Sprintf("no, with all %d from %s (D)", len(out), e.from.label)
		m.notice = fmt.Sprintf("denied %d asks from %s", len(out), e.from.label)
		return out
	case k.Code == keyEsc || k.Code == keyRune && (k.Rune == 'n' || k.Rune == 'N'):
		m.stage, m.cursor = stageChoose, 0
		m.notice = "nothing was denied"
	default:
		m.notice = "press y to deny them all, or n or esc to go back"
	}
	return nil
}

// denyAllLines is the confirmation.
func (m *machine) denyAllLines() []line {
	n := m.denyAllCount()
	return []line{
		{text: fmt.Sprintf("  Deny this ask and the %d others waiting from %s (%d in all)?", n-1, m.cur.from.label, n), sgr: sgrBold},
		{text: fmt.Sprintf("  Each is told: %q", reasonDenyAll)},
	}
}
