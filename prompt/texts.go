package prompt

import "sync"

// texts keeps one copy of each text that held asks repeat: a flood's asks
// come from one requester, whose agent, session, cwd and the rule that
// asked are the same in every ask, and a copy of each per ask was most of
// what 10,000 held asks cost beyond their fixed structures. The copies
// are the ones the first ask made, which share no memory with any request.
//
// The table is bounded: at maxTexts it starts again empty, so texts that
// no held ask repeats any more do not stay for the broker's life. The
// asks that hold a text keep it either way; a text seen after the table
// started again is only kept once more.
type texts struct {
	mu sync.Mutex
	m  map[string]string
}

// maxTexts bounds the table; maxText bounds a text worth sharing (a
// longer one is a value, rarely repeated).
const (
	maxTexts = 4096
	maxText  = 4 * capLine
)

// share returns the table's copy of s, which it keeps if it had none. A
// nil table shares nothing.
func (t *texts) share(s string) string {
	if t == nil || s == "" || len(s) > maxText {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.m[s]; ok {
		return c
	}
	if t.m == nil || len(t.m) >= maxTexts {
		t.m = make(map[string]string)
	}
	t.m[s] = s
	return s
}

// shareAll shares each of lines in place, and returns them.
func (t *texts) shareAll(lines []string) []string {
	for i, s := range lines {
		lines[i] = t.share(s)
	}
	return lines
}
