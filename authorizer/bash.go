package authorizer

import (
	"encoding/json"

	"github.com/seed6639df8c/courier/wire"
)

// projectBash is the bash input of req as its child fixed it: nil unless
// the access intent's surface is bash and the complete input is carried by
// a structured field whose meaning is known for the child that wrote it.
// The prose message is never read: it is free text, and a judge that saw
// a "complete input" parsed out of it would trust a guess.
//
// Who writes what, and so where the complete input is:
//
//   - pi 25.x (a request with a prompt payload): the display value is the
//     triggering unit (the most restrictive unit of the line, pi's
//     check.command), not the line. Since 25.3 the payload of a bash ask
//     carries the line as evidence labelled "full command" whenever it
//     differs from that unit, and omits it only when the line is the unit.
//     So the line is that evidence's text; without it, the display value,
//     provided the payload is a bash payload with an evidence list and
//     names the same value (see [piCompleteInput]).
//   - courier's own child (`child ask`, forward.Ask.Request) and the agent
//     hook adapter (`child hook`): the display value is the line unchanged
//     and askingUnits lists every unit (docs/decisions/0010-bash-units.md);
//     they send no payload. So a bash request with asking units and no
//     payload has its line in the display value. pi sends asking units only
//     in versions that always send a payload, so no pi request is read this
//     way.
//   - Anything else (pi 20.x, which sends no access intent; a pi 25.x child
//     from before the payload, whose display value is a unit and which
//     sends no asking units; a payload of another shape): nil. A judge then
//     knows the complete input is missing and defers rather than allowing
//     on a unit it takes for the whole.
func projectBash(req wire.Request) *BashInput {
	ai := req.AccessIntent
	if ai == nil || ai.Surface != "bash" {
		return nil
	}
	var complete string
	if len(req.Payload) > 0 {
		complete = piCompleteInput(req.Payload, req.Value)
	} else if len(ai.AskingUnits) > 0 {
		complete = req.Value
	}
	if complete == "" {
		return nil
	}
	triggering := make([]string, len(ai.AskingUnits))
	for i, u := range ai.AskingUnits {
		triggering[i] = u.Command
	}
	return &BashInput{Complete: complete, Triggering: triggering}
}

// fullCommandLabel is the label of pi's prompt-payload evidence that holds
// a bash ask's complete input (pi-permission-system's tool-ask payload,
// 25.3 and later).
const fullCommandLabel = "full command"

// piCompleteInput is the complete bash input a pi 25.x prompt payload
// states, "" when it states none. payload must be a bash payload
// ({"kind":"bash", "request":{"value":…}, "evidence":[{"label":…,
// "text":…}…]}, keys matched exactly, every evidence item a label and a
// text string): its "full command" evidence when present, else the
// display value when the payload's own value is the same string, because
// pi omits the evidence only when the line is the unit that asked.
func piCompleteInput(payload json.RawMessage, value string) string {
	var p struct {
		Kind     json.RawMessage `json:"kind"`
		Request  json.RawMessage `json:"request"`
		Evidence json.RawMessage `json:"evidence"`
	}
	if !exactObject(payload, map[string]*json.RawMessage{"kind": &p.Kind, "request": &p.Request, "evidence": &p.Evidence}) {
		return ""
	}
	if jsonString(p.Kind) != "bash" {
		return ""
	}
	var items []json.RawMessage
	if p.Evidence == nil || json.Unmarshal(p.Evidence, &items) != nil || items == nil {
		// No evidence list (absent, null, not an array): not the payload
		// shape that would carry the complete input, so its absence
		// says nothing.
		return ""
	}
	for _, raw := range items {
		var label, text json.RawMessage
		if !exactObject(raw, map[string]*json.RawMessage{"label": &label, "text": &text}) || !isJSONString(label) || !isJSONString(text) {
			// Not pi's {label, text, detail}: a list this payload's
			// writer shapes its own way says nothing of the line.
			return ""
		}
		if jsonString(label) == fullCommandLabel {
			return jsonString(text)
		}
	}
	var request json.RawMessage
	if !exactObject(p.Request, map[string]*json.RawMessage{"value": &request}) {
		return ""
	}
	if own := jsonString(request); own != "" && own == value {
		return value
	}
	return ""
}

// exactObject reads data as a JSON object and sets each *fields[key] to
// the raw value under exactly that key (encoding/json would also take
// "Kind" or "KIND" for kind). It reports false when data is not an object.
func exactObject(data json.RawMessage, fields map[string]*json.RawMessage) bool {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil || all == nil {
		return false
	}
	for key, dst := range fields {
		*dst = all[key]
	}
	return true
}

// isJSONString reports whether raw is a JSON string.
func isJSONString(raw json.RawMessage) bool {
	var s string
	return raw != nil && json.Unmarshal(raw, &s) == nil
}

// jsonString is raw as a string, "" when it is absent or not a string.
func jsonString(raw json.RawMessage) string {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
