package intent

import (
	"strings"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// claudeDecoder reads Claude Code's transcript (the transcript_path of
// its hook events): JSON lines linked by uuid and parentUuid, most of them
// bookkeeping (attachments, queue operations, API request records, cost
// state) that carry the system prompt, the environment and copies of the
// user's words; only "user" and "assistant" entries are read, by their
// message. Admitted: a user message's text (a string, or its text
// blocks), an assistant message's text blocks, and the compaction
// summary (isCompactSummary), derived. Not admitted: tool_use inputs,
// tool_result content (a user entry carrying any is no turn), thinking,
// images, meta entries (isMeta), subagent entries (isSidechain), and user
// text the harness wrote (slash-command records, local command output,
// task notifications: see harness). The path from the newest entry back
// is the conversation; a compact_boundary is a root, after which the
// summary and the messages its preserved segment kept come first.
type claudeDecoder struct {
	t   *tree
	lim limits
}

func newClaude(lim limits) *claudeDecoder {
	return &claudeDecoder{t: newTree(lim.nodes, lim.text), lim: lim}
}

func (d *claudeDecoder) skipped() { d.t.skipped() }

func (d *claudeDecoder) conversation(budget int) []Item { return d.t.conversation(budget) }

func (d *claudeDecoder) line(v strictjson.Value) {
	id := str(v, "uuid")
	if id == "" || isTrue(v, "isSidechain") {
		// Not an entry of the main conversation's tree: a summary title,
		// a queue operation, a request record; or a subagent's own turn.
		return
	}
	n := &node{id: id, parent: str(v, "parentUuid")}
	switch kind := str(v, "type"); kind {
	case "user", "assistant":
		if it, ok := d.message(kind, v); ok {
			n.items = []Item{it}
		}
	case "system":
		if str(v, "subtype") == "compact_boundary" {
			n.kind = claudeBoundary
			n.parent = "" // a new root, whatever parentUuid says
			seg := get(get(v, "compactMetadata"), "preservedSegment")
			n.anchor, n.segHead, n.segTail = str(seg, "anchorUuid"), str(seg, "headUuid"), str(seg, "tailUuid")
		}
	}
	d.t.add(n)
}

func (d *claudeDecoder) message(kind string, v strictjson.Value) (Item, bool) {
	m := get(v, "message")
	if role := str(m, "role"); role != kind || isTrue(v, "isMeta") {
		return Item{}, false
	}
	if kind == RoleAssistant {
		parts, _ := textParts(get(m, "content"), []string{"text"}, nil)
		return turn(RoleAssistant, false, parts, d.lim)
	}
	parts, toolResult := textParts(get(m, "content"), []string{"text"}, []string{"tool_result"})
	if toolResult {
		return Item{}, false
	}
	if isTrue(v, "isCompactSummary") {
		for i, p := range parts {
			parts[i] = claudeSummary(p)
		}
		return turn(RoleAssistant, true, parts, d.lim)
	}
	if anyHarness(parts) {
		return Item{}, false
	}
	return turn(RoleUser, false, parts, d.lim)
}

// claudeSummary returns the summary of Claude Code's compaction message
// without the harness's wording around it (the reminders it inserts, the
// path of the full transcript, the instructions to the model): the text
// after "Summary:" up to "If you need specific details", when both are
// there; the whole text, reminders removed, when they are not.
func claudeSummary(s string) string {
	for {
		i := strings.Index(s, "<system-reminder>")
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], "</system-reminder>")
		if j < 0 {
			s = s[:i]
			break
		}
		s = s[:i] + s[i+j+len("</system-reminder>"):]
	}
	if _, after, ok := strings.Cut(s, "\nSummary:\n"); ok {
		s = after
	}
	if before, _, ok := strings.Cut(s, "\n\nIf you need specific details from before compaction"); ok {
		s = before
	}
	return s
}
