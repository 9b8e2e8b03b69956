package agenthook

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// CLI names the agent whose hook runs the adapter: it decides the output's
// shape, and the agent's name when an event names none.
type CLI string

// The agents the adapter speaks for.
const (
	ClaudeCode CLI = "claude-code"
	Codex      CLI = "codex"
)

// ParseCLI reads a CLI name as the command line gives it.
func ParseCLI(s string) (CLI, error) {
	switch CLI(s) {
	case ClaudeCode, Codex:
		return CLI(s), nil
	}
	return "", fmt.Errorf("unknown agent %q: expected claude-code or codex", s)
}

// EventName is a hook event the adapter answers.
type EventName string

// The events the adapter answers. Any other is refused: its output shape
// is not one the adapter knows the agent honours.
const (
	PermissionRequest EventName = "PermissionRequest"
	PreToolUse        EventName = "PreToolUse"
)

// MaxEventSize bounds the event read from stdin. A Write's content rides
// in its tool_input, so the bound is generous; an event over it is not
// read, and gets no decision.
const MaxEventSize = 4 << 20

// ErrEvent is wrapped by every error Decode returns.
var ErrEvent = errors.New("invalid hook event")

// Event is one hook event as the agent sent it, reduced to what the
// adapter uses. Fields the agents add over versions (effort, prompt_id,
// model, turn_id...) are ignored.
type Event struct {
	// Name is hook_event_name.
	Name EventName
	// SessionID is the agent's session (the parent's, in a subagent).
	SessionID string
	// AgentID is present only inside a subagent: the requesting session.
	AgentID string
	// AgentType is the agent's name (also set under claude --agent, so it
	// never tells a subagent apart on its own).
	AgentType string
	// Cwd is the agent's working directory: absolute.
	Cwd string
	// PermissionMode is the agent's mode, as sent.
	PermissionMode string
	// ToolName is the tool about to run: Bash, Write, apply_patch,
	// mcp__server__tool...
	ToolName string
	// ToolInput is the tool's input, an object, as its JSON bytes (checked
	// by strictjson).
	ToolInput []byte
	// Suggestions are Claude Code's permission_suggestions (PermissionRequest
	// only): the "always allow" rows.
	Suggestions []Suggestion
}

// Suggestion is one permission_suggestions entry: an addRules suggestion
// with its rules. Entries of other types (setMode, addDirectories) carry
// no rule and are not kept.
type Suggestion struct {
	Behavior string
	Rules    []SuggestedRule
}

// SuggestedRule is one {toolName, ruleContent} of a suggestion.
type SuggestedRule struct {
	ToolName    string
	RuleContent string
}

// fieldError names a field of the event and what was expected of it.
func fieldError(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrEvent, field, fmt.Sprintf(format, args...))
}

// members reads an object's members by exact key. strictjson.Check has
// refused repeated keys (in any letter case) already.
func members(v strictjson.Value) (map[string]strictjson.Value, error) {
	m := make(map[string]strictjson.Value)
	it := v.Members()
	for it.Next() {
		m[string(it.Key().Text())] = it.Value()
	}
	return m, it.Err()
}

// str reads the string member key of m: absent or null is "", another
// kind is an error naming the field.
func str(m map[string]strictjson.Value, field, key string) (string, error) {
	v, ok := m[key]
	if !ok || v.Kind() == strictjson.KindNull {
		return "", nil
	}
	if v.Kind() != strictjson.KindString {
		return "", fieldError(field+key, "expected a string, got %s", v.Kind().Noun())
	}
	return string(v.Text()), nil
}

// required is str for a member that must be a non-empty string.
func required(m map[string]strictjson.Value, field, key string) (string, error) {
	s, err := str(m, field, key)
	if err == nil && s == "" {
		err = fieldError(field+key, "expected a non-empty string, it is missing or empty")
	}
	return s, err
}

// Decode reads one hook event. The document must be one JSON object
// (strictjson: no repeated keys in any letter case), at most MaxEventSize
// bytes, with hook_event_name one of the events the adapter answers,
// tool_name and an absolute cwd, and tool_input an object. Every error
// wraps ErrEvent and names the field and what was expected; the Event
// returned with an error holds the event's name when it was read.
func Decode(data []byte) (Event, error) {
	if len(data) > MaxEventSize {
		return Event{}, fmt.Errorf("%w: %d bytes, over the %d an event may have", ErrEvent, len(data), MaxEventSize)
	}
	if err := strictjson.Check(data); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrEvent, err)
	}
	root := strictjson.Root(data)
	if root.Kind() != strictjson.KindObject {
		return Event{}, fmt.Errorf("%w: expected a JSON object, got %s", ErrEvent, root.Kind().Noun())
	}
	m, err := members(root)
	if err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrEvent, err)
	}
	var ev Event
	var name string
	if name, err = required(m, "", "hook_event_name"); err != nil {
		return Event{}, err
	}
	switch EventName(name) {
	case PermissionRequest, PreToolUse:
		ev.Name = EventName(name)
	default:
		return Event{}, fieldError("hook_event_name", "expected PermissionRequest or PreToolUse, got %q", name)
	}
	ev, err = decodeFields(ev, m)
	if err != nil {
		// The event's name alone is kept: a deny can still be rendered in
		// the shape the agent honours for it.
		return Event{Name: ev.Name}, err
	}
	return ev, nil
}

// decodeFields reads the members of an event past its name.
func decodeFields(ev Event, m map[string]strictjson.Value) (Event, error) {
	var err error
	for _, f := range []struct {
		key  string
		dst  *string
		must bool
	}{
		{"session_id", &ev.SessionID, false},
		{"agent_id", &ev.AgentID, false},
		{"agent_type", &ev.AgentType, false},
		{"cwd", &ev.Cwd, true},
		{"permission_mode", &ev.PermissionMode, false},
		{"tool_name", &ev.ToolName, true},
	} {
		get := str
		if f.must {
			get = required
		}
		if *f.dst, err = get(m, "", f.key); err != nil {
			return Event{}, err
		}
	}
	if !filepath.IsAbs(ev.Cwd) || strings.ContainsRune(ev.Cwd, 0) {
		return Event{}, fieldError("cwd", "expected an absolute path, got %q", ev.Cwd)
	}
	ev.Cwd = filepath.Clean(ev.Cwd)
	if _, ok := m["agent_id"]; ok && ev.AgentID == "" {
		// An empty or null agent_id must not read as the main agent's
		// call: only an absent one does.
		return Event{}, fieldError("agent_id", "expected a non-empty string when present")
	}
	input, ok := m["tool_input"]
	if !ok || input.Kind() != strictjson.KindObject {
		return Event{}, fieldError("tool_input", "expected an object, got %s", input.Kind().Noun())
	}
	ev.ToolInput = input.Raw()
	if ev.Suggestions, err = suggestions(m["permission_suggestions"]); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// suggestions reads permission_suggestions: absent or null is none; each
// entry must be an object, and of those only addRules entries with their
// rules are kept.
func suggestions(v strictjson.Value) ([]Suggestion, error) {
	const field = "permission_suggestions"
	switch v.Kind() {
	case strictjson.KindInvalid, strictjson.KindNull:
		return nil, nil
	case strictjson.KindArray:
	default:
		return nil, fieldError(field, "expected an array, got %s", v.Kind().Noun())
	}
	var out []Suggestion
	items := v.Items()
	for i := 0; items.Next(); i++ {
		at := fmt.Sprintf("%s[%d].", field, i)
		item := items.Value()
		if item.Kind() != strictjson.KindObject {
			return nil, fieldError(at[:len(at)-1], "expected an object, got %s", item.Kind().Noun())
		}
		m, err := members(item)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrEvent, at, err)
		}
		typ, err := str(m, at, "type")
		if err != nil {
			return nil, err
		}
		behavior, err := str(m, at, "behavior")
		if err != nil {
			return nil, err
		}
		if typ != "addRules" {
			continue
		}
		s := Suggestion{Behavior: behavior}
		rules := m["rules"]
		if rules.Kind() != strictjson.KindArray {
			return nil, fieldError(at+"rules", "expected an array, got %s", rules.Kind().Noun())
		}
		ri := rules.Items()
		for j := 0; ri.Next(); j++ {
			rat := fmt.Sprintf("%srules[%d].", at, j)
			r := ri.Value()
			if r.Kind() != strictjson.KindObject {
				return nil, fieldError(rat[:len(rat)-1], "expected an object, got %s", r.Kind().Noun())
			}
			rm, err := members(r)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrEvent, rat, err)
			}
			var sr SuggestedRule
			if sr.ToolName, err = required(rm, rat, "toolName"); err != nil {
				return nil, err
			}
			if sr.RuleContent, err = str(rm, rat, "ruleContent"); err != nil {
				return nil, err
			}
			s.Rules = append(s.Rules, sr)
		}
		if err := ri.Err(); err != nil {
			return nil, fmt.Errorf("%w: %srules: %w", ErrEvent, at, err)
		}
		out = append(out, s)
	}
	if err := items.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrEvent, field, err)
	}
	return out, nil
}
