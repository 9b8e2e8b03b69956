package intent

import "github.com/seed6639df8c/courier/internal/strictjson"

// piDecoder reads pi's session file (JSONL): a "session" header, then
// entries linked by id and parentId. Admitted: the text blocks of user
// and assistant messages; a compaction entry's summary and a
// branch_summary's, derived. Not admitted: thinking, tool calls, tool
// results, bash executions (the user's !command and its output), custom
// messages extensions inject, images, and everything else. The path from
// the newest entry back is the conversation, with pi's compaction
// applied: the latest compaction on the path stands for everything
// before the first entry it kept.
type piDecoder struct {
	t   *tree
	lim limits
}

func newPi(lim limits) *piDecoder { return &piDecoder{t: newTree(lim.nodes, lim.text), lim: lim} }

func (d *piDecoder) skipped() { d.t.skipped() }

func (d *piDecoder) conversation(budget int) []Item { return d.t.conversation(budget) }

func (d *piDecoder) line(v strictjson.Value) {
	kind := str(v, "type")
	if kind == "session" {
		return // the header: no entry of the tree
	}
	n := &node{id: str(v, "id"), parent: str(v, "parentId")}
	switch kind {
	case "message":
		if it, ok := d.message(get(v, "message")); ok {
			n.items = []Item{it}
		}
	case "compaction":
		n.kind = piCompaction
		n.firstKept = str(v, "firstKeptEntryId")
		if it, ok := turn(RoleAssistant, true, []string{str(v, "summary")}, d.lim); ok {
			n.summary = &it
		}
	case "branch_summary":
		if it, ok := turn(RoleAssistant, true, []string{str(v, "summary")}, d.lim); ok {
			n.items = []Item{it}
		}
	}
	d.t.add(n)
}

func (d *piDecoder) message(m strictjson.Value) (Item, bool) {
	switch role := str(m, "role"); role {
	case RoleUser:
		parts, _ := textParts(get(m, "content"), []string{"text"}, nil)
		if anyHarness(parts) {
			return Item{}, false
		}
		return turn(role, false, parts, d.lim)
	case RoleAssistant:
		parts, _ := textParts(get(m, "content"), []string{"text"}, nil)
		return turn(role, false, parts, d.lim)
	}
	return Item{}, false
}
