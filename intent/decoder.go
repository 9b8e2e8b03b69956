package intent

import (
	"strings"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// decoder reads the lines of one transcript format. Every method is
// called with the Reader's lock held.
type decoder interface {
	// line reads one line, a JSON object that passed strictjson.Check.
	line(v strictjson.Value)
	// skipped says a line could not be read: over the line limit, or not
	// one JSON object.
	skipped()
	// conversation returns the text of the conversation as it stands,
	// newest first, at least budget bytes of it when there is as much.
	conversation(budget int) []Item
}

// limits bound what a decoder holds: its entries, the bytes of their
// text, and the bytes of one item (the budget: more could never be kept).
type limits struct {
	nodes, text, item int
}

// turn builds an Item of the decoded text parts of one turn: the parts
// are cleaned and joined by a blank line, the result cut to lim.item. ok
// is false when nothing is left.
func turn(role string, derived bool, parts []string, lim limits) (Item, bool) {
	var b strings.Builder
	for _, p := range parts {
		p = clean(p)
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p)
	}
	if b.Len() == 0 {
		return Item{}, false
	}
	return Item{Role: role, Text: cutHead(b.String(), lim.item), Derived: derived}, true
}

// textParts returns the text of a message's content: content itself when
// it is a string, else the "text" of each item of the array whose "type"
// is one of types. Any other item (a tool call, a tool result, thinking,
// an image) adds nothing; other reports whether there was one whose type
// is in stop, which makes the whole content no turn of the conversation
// (a tool result carried in a user message).
func textParts(content strictjson.Value, types, stop []string) (parts []string, other bool) {
	switch content.Kind() {
	case strictjson.KindString:
		return []string{text(content)}, false
	case strictjson.KindArray:
		items(content, func(block strictjson.Value) {
			kind := str(block, "type")
			for _, s := range stop {
				if kind == s {
					other = true
				}
			}
			for _, t := range types {
				if kind == t {
					parts = append(parts, str(block, "text"))
					break
				}
			}
		})
	}
	return parts, other
}

// anyHarness reports whether one of parts is text the harness wrote
// (see harness).
func anyHarness(parts []string) bool {
	for _, p := range parts {
		if harness(p) {
			return true
		}
	}
	return false
}
