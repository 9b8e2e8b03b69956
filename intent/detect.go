package intent

import "github.com/seed6639df8c/courier/internal/strictjson"

// The formats a Reader reads (Options.Format).
const (
	// FormatAuto tells the format by the first lines that show it.
	FormatAuto = "auto"
	// FormatPi is pi's session file.
	FormatPi = "pi"
	// FormatClaudeCode is Claude Code's transcript.
	FormatClaudeCode = "claude-code"
	// FormatCodex is Codex's rollout file.
	FormatCodex = "codex"
)

// Formats lists the values Options.Format takes.
var Formats = []string{FormatAuto, FormatPi, FormatClaudeCode, FormatCodex}

// detectLines is how many lines auto detection looks at before it gives
// up: each format says what it is on its first line or within a few.
const detectLines = 64

// detect returns the format one line shows, or "" when it shows none.
//   - pi: its "session" header, or an entry with "id" and "parentId";
//   - Claude Code: any line with "sessionId" or "parentUuid" (camelCase:
//     neither of the others writes them);
//   - Codex: {"type", "payload"} with one of its record types.
func detect(v strictjson.Value) string {
	kind := str(v, "type")
	if payload := get(v, "payload"); payload.Kind() == strictjson.KindObject {
		switch kind {
		case "session_meta", "response_item", "event_msg", "turn_context", "compacted":
			return FormatCodex
		}
	}
	if get(v, "parentUuid").Kind() != strictjson.KindInvalid || get(v, "sessionId").Kind() == strictjson.KindString {
		return FormatClaudeCode
	}
	if kind == "session" && get(v, "cwd").Kind() == strictjson.KindString {
		return FormatPi
	}
	if get(v, "id").Kind() == strictjson.KindString && get(v, "parentId").Kind() != strictjson.KindInvalid {
		return FormatPi
	}
	return ""
}

func newDecoder(format string, lim limits) decoder {
	switch format {
	case FormatPi:
		return newPi(lim)
	case FormatClaudeCode:
		return newClaude(lim)
	case FormatCodex:
		return newCodex(lim)
	}
	return nil
}
