package intent

import (
	"strings"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// codexDecoder reads Codex's rollout file (the transcript_path of its hook
// events): JSON lines {"timestamp", "type", "payload"} in the order things
// happened. The conversation is the model-visible history it rebuilds on
// resume: "response_item" messages, reset by each "compacted" line to the
// history that replaced it, cut by "thread_rolled_back" events. Admitted:
// the input_text of user messages the user wrote, the output_text of
// assistant messages, and a compaction's summary, derived. Not admitted:
// developer and system messages, user messages the harness wrote (the
// environment context, AGENTS.md, skills, a user's shell command and its
// output, subagent notifications: by their provenance where the file
// records it, and by their leading tag as Codex itself tells them apart),
// the assistant's answer to a compaction request (its summary comes with
// the compacted line), reasoning, function and tool calls and their
// output, and every event_msg (the same words again, for the UI).
type codexDecoder struct {
	items []Item // oldest first
	text  int
	lim   limits
}

func newCodex(lim limits) *codexDecoder { return &codexDecoder{lim: lim} }

func (d *codexDecoder) skipped() {}

func (d *codexDecoder) conversation(budget int) []Item {
	var rev []Item
	size := 0
	for i := len(d.items) - 1; i >= 0 && size < budget; i-- {
		rev = append(rev, d.items[i])
		size += len(d.items[i].Text)
	}
	return rev
}

func (d *codexDecoder) line(v strictjson.Value) {
	payload := get(v, "payload")
	switch str(v, "type") {
	case "response_item":
		if isTrue(get(v, "metadata"), "compaction_output") {
			return // the answer to a compaction request: its summary comes with the compacted line
		}
		if it, ok := d.message(payload); ok {
			d.push(it)
		}
	case "compacted":
		d.compacted(payload)
	case "event_msg":
		if str(payload, "type") == "thread_rolled_back" {
			d.rollBack(get(payload, "num_turns"))
		}
	}
}

func (d *codexDecoder) push(it Item) {
	d.items = append(d.items, it)
	d.text += len(it.Text)
	drop := 0
	for d.text > d.lim.text && drop < len(d.items)-1 {
		d.text -= len(d.items[drop].Text)
		drop++
	}
	if drop > 0 {
		d.items = append(d.items[:0], d.items[drop:]...)
	}
}

// message reads a response item: a message of the user or the assistant.
func (d *codexDecoder) message(p strictjson.Value) (Item, bool) {
	if str(p, "type") != "message" {
		return Item{}, false
	}
	switch role := str(p, "role"); role {
	case RoleUser:
		parts, _ := textParts(get(p, "content"), []string{"input_text"}, nil)
		if !userProvenance(p) || anyHarness(parts) {
			return Item{}, false
		}
		return turn(RoleUser, false, parts, d.lim)
	case RoleAssistant:
		parts, _ := textParts(get(p, "content"), []string{"output_text"}, nil)
		return turn(RoleAssistant, false, parts, d.lim)
	}
	return Item{}, false
}

// userProvenance reports whether every provenance the file records for
// a user message's parts is "user"; with none of its text one of the
// harness's fragments (anyHarness), the message is the user's words.
func userProvenance(p strictjson.Value) bool {
	meta := get(get(p, "internal_chat_message_metadata_passthrough"), "content_item_metadata")
	user := true
	items(meta, func(m strictjson.Value) {
		if t := str(get(m, "provenance"), "type"); t != "" && t != RoleUser {
			user = false
		}
	})
	return user
}

// compacted replaces the conversation with the history the compaction
// left: the user messages it kept and its summary. A line without that
// history (Codex before it recorded one) keeps the user's messages so far
// and adds the summary, as Codex then rebuilt it.
func (d *codexDecoder) compacted(p strictjson.Value) {
	summary, hasSummary := turn(RoleAssistant, true, []string{codexSummary(str(p, "message"))}, d.lim)
	var next []Item
	history := get(p, "replacement_history")
	if history.Kind() == strictjson.KindArray {
		summaryText := str(p, "message")
		items(history, func(it strictjson.Value) {
			if str(it, "type") != "message" {
				return
			}
			parts, _ := textParts(get(it, "content"), []string{"input_text", "output_text"}, nil)
			if summaryText != "" && len(parts) == 1 && parts[0] == summaryText {
				if hasSummary {
					next = append(next, summary)
					hasSummary = false
				}
				return
			}
			if m, ok := d.message(it); ok {
				next = append(next, m)
			}
		})
	} else {
		for _, it := range d.items {
			if it.Role == RoleUser && !it.Derived {
				next = append(next, it)
			}
		}
	}
	if hasSummary {
		next = append(next, summary)
	}
	d.items, d.text = nil, 0
	for _, it := range next {
		d.push(it)
	}
}

// rollBack drops the last n user turns and everything after the first of
// them, as Codex does when the user backs out of turns.
func (d *codexDecoder) rollBack(count strictjson.Value) {
	if count.Kind() != strictjson.KindNumber {
		return
	}
	n := 0
	for _, c := range count.Raw() {
		if c < '0' || c > '9' || n > 1<<20 {
			return // negative, fractional or absurd: not a count Codex writes
		}
		n = n*10 + int(c-'0')
	}
	cut := len(d.items)
	for i := len(d.items) - 1; i >= 0 && n > 0; i-- {
		if d.items[i].Role == RoleUser && !d.items[i].Derived {
			cut = i
			n--
		}
	}
	if n > 0 {
		// More turns than the conversation holds: all of them go, and a
		// summary before them with them (it summarised turns now gone).
		cut = 0
	}
	for _, it := range d.items[cut:] {
		d.text -= len(it.Text)
	}
	d.items = d.items[:cut]
}

// codexSummaryPrefix is what Codex puts before the summary it hands the
// model after a compaction: instructions to the model, not the summary.
const codexSummaryPrefix = "Another language model started to solve this problem"

// codexSummary returns a compaction's message without codexSummaryPrefix
// and the rest of its sentence, when it starts with it.
func codexSummary(s string) string {
	if rest, ok := strings.CutPrefix(s, codexSummaryPrefix); ok {
		if _, after, ok := strings.Cut(rest, ":\n"); ok {
			return after
		}
	}
	return s
}
