package judge

import (
	"strings"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/authorizer"
)

// Bounds of the evidence packet. The complete input and the units are
// never cut: a model that saw part of a command cannot allow it, so an
// input past the bound is deferred before any call. The conversation is
// cut from its oldest end: the broker's own budget (--intent-budget)
// normally keeps it well inside this one.
const (
	// MaxInputBytes bounds the complete input, and the triggering units
	// together.
	MaxInputBytes = 32 << 10
	// MaxConversationBytes bounds the conversation text shown.
	MaxConversationBytes = 48 << 10
	// maxAgentBytes bounds a requester's agent name.
	maxAgentBytes = 100
	// maxCwdBytes bounds a working directory; a longer one is unknown.
	maxCwdBytes = 4096
)

// packet is the evidence the model sees, and nothing else (seed 003's
// minimal evidence contract). What an [authorizer.Evidence] holds beyond
// it stays out of the prompt: the request id, session ids, the constant
// surface, the child's message and payload, the suggested grants.
type packet struct {
	// Complete is the complete bash input.
	Complete string
	// Triggering are the units that asked, nil when they say nothing the
	// complete input does not (one unit, the whole input).
	Triggering []string
	// Cwd is the requester's working directory, "" when unknown (or not
	// absolute).
	Cwd string
	// RelCwd is a disclosed working directory that is not absolute: the
	// prompt says it was given and why it is still unknown.
	RelCwd string
	// HasConversation: the broker disclosed a conversation.
	HasConversation bool
	// Forwarded: a child asked, the conversation is the serving root's.
	Forwarded bool
	// Agent is the requesting child's agent name, "" when unknown.
	Agent string
	// Items are the conversation's turns, oldest first, within
	// MaxConversationBytes.
	Items []item
	// Omitted counts the oldest turns left out.
	Omitted int
}

// item is one conversation turn as the prompt labels it.
type item struct {
	N     int
	Label string
	Text  string
	// Cut: the turn alone was over the budget; Text is its end.
	Cut bool
}

// The labels of turns.
const (
	labelUser      = "user"
	labelAssistant = "assistant"
	labelDerived   = "summary (derived by a model from earlier turns: untrusted, not the user's words)"
	labelOther     = "other (unknown role: untrusted)"
)

// newPacket builds the packet of a bash ask whose Bash input is known.
func newPacket(ev authorizer.Evidence) packet {
	p := packet{Complete: ev.Bash.Complete}
	whole := strings.TrimSpace(ev.Bash.Complete)
	for _, t := range ev.Bash.Triggering {
		if strings.TrimSpace(t) != whole {
			p.Triggering = ev.Bash.Triggering
			break
		}
	}
	// Only an absolute directory says what a relative path means: ".",
	// "build" or "~/src" fix nothing, and are unknown.
	if ev.RequesterCwd != nil && len(*ev.RequesterCwd) <= maxCwdBytes {
		if strings.HasPrefix(*ev.RequesterCwd, "/") {
			p.Cwd = *ev.RequesterCwd
		} else if *ev.RequesterCwd != "" {
			p.RelCwd = *ev.RequesterCwd
		}
	}
	if c := ev.Conversation; c != nil {
		p.HasConversation = true
		p.Forwarded = c.Forwarded
		if c.Forwarded {
			p.Agent = cutBytes(strings.TrimSpace(c.RequesterAgent), maxAgentBytes)
		}
		p.Items, p.Omitted = items(c.Items)
	} else if ev.Forwarding.RequesterSessionID != "" {
		// No conversation was disclosed, but the ask still came from a
		// child session (every mailbox ask does): the model is told so,
		// and by which agent, as the seed asks for a forwarded ask.
		p.Forwarded = true
		p.Agent = cutBytes(strings.TrimSpace(ev.Forwarding.RequesterAgentName), maxAgentBytes)
	}
	return p
}

// items labels the turns and keeps the newest within MaxConversationBytes;
// a newest turn that alone is larger keeps its end.
func items(in []authorizer.ConversationItem) ([]item, int) {
	budget := MaxConversationBytes
	first := len(in)
	for first > 0 && len(in[first-1].Text) <= budget {
		budget -= len(in[first-1].Text)
		first--
	}
	var out []item
	if first == len(in) && first > 0 {
		// Even the newest turn is over budget: show its end, which is
		// nearest the ask.
		last := in[first-1]
		first--
		out = append(out, item{N: first + 1, Label: label(last), Text: tailBytes(last.Text, MaxConversationBytes), Cut: true})
		return out, first
	}
	for i := first; i < len(in); i++ {
		out = append(out, item{N: i + 1, Label: label(in[i]), Text: in[i].Text})
	}
	return out, first
}

// label is how the prompt names a turn's author.
func label(it authorizer.ConversationItem) string {
	switch {
	case it.Derived:
		return labelDerived
	case it.Role == "user":
		return labelUser
	case it.Role == "assistant":
		return labelAssistant
	}
	return labelOther
}

// hasUserIntent reports whether c holds any of the user's own words: a
// user turn, not derived, not blank. Assistant turns and summaries are
// context; they cannot carry the intent an allow rests on.
func hasUserIntent(c *authorizer.Conversation) bool {
	if c == nil {
		return false
	}
	for _, it := range c.Items {
		if it.Role == "user" && !it.Derived && strings.TrimSpace(it.Text) != "" {
			return true
		}
	}
	return false
}

// inputBytes is the size of the input the packet must show whole.
func inputBytes(b *authorizer.BashInput) int {
	n := len(b.Complete)
	for _, t := range b.Triggering {
		n += len(t)
	}
	return n
}

// cutBytes cuts s to at most n bytes on a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// tailBytes is the last n bytes of s at most, starting on a rune boundary.
func tailBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}
