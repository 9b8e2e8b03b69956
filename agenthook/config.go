package agenthook

import (
	"encoding/json"
	"strings"
	"time"
)

// DefaultTimeout is how long the hook waits for the broker by default:
// a human at the broker's prompt has minutes, and the hook's own timeout
// in the agent's settings (HookTimeout) stays above it.
const DefaultTimeout = 5 * time.Minute

// hookTimeoutMargin is how much longer the agent lets the hook run than
// the hook waits: starting, reading the heartbeat, removing an abandoned
// request and printing all happen outside the wait.
const hookTimeoutMargin = 60 * time.Second

// HookTimeout is the `timeout` (seconds) the settings snippet gives the
// hook for an adapter that waits wait: above it, so that the agent never
// kills the hook while it could still answer (a killed hook's answer is
// lost, and a request it wrote stays for the broker to answer nobody).
func HookTimeout(wait time.Duration) int {
	secs := (wait + hookTimeoutMargin + time.Second - 1) / time.Second
	return int(secs)
}

// The settings shape both agents read: hooks.<Event>[] = {matcher,
// hooks: [{type, command, timeout}]}.
type (
	settings struct {
		Hooks map[string][]matcherGroup `json:"hooks"`
	}
	matcherGroup struct {
		Matcher string        `json:"matcher"`
		Hooks   []hookCommand `json:"hooks"`
	}
	hookCommand struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
)

// Config is the settings to paste for cli (Claude Code's settings.json,
// Codex's hooks.json; the same shape): a PermissionRequest hook on every
// tool ("*") running command, with HookTimeout(wait) seconds. The command
// is run by a shell, so it must be quoted (ShellJoin).
func Config(cli CLI, command string, wait time.Duration) []byte {
	s := settings{Hooks: map[string][]matcherGroup{
		string(PermissionRequest): {{
			Matcher: "*",
			Hooks:   []hookCommand{{Type: "command", Command: command, Timeout: HookTimeout(wait)}},
		}},
	}}
	out, _ := json.MarshalIndent(s, "", "  ")
	return append(out, '\n')
}

// ShellJoin quotes each word for a POSIX shell (single quotes where a
// word holds anything but letters, digits and `-_./=:,+@%`) and joins
// them with spaces: both agents run a hook's command with a shell (Codex
// a login shell).
func ShellJoin(words ...string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	return strings.Join(quoted, " ")
}

func shellQuote(w string) string {
	if w == "" {
		return "''"
	}
	for _, c := range w {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.ContainsRune("-_./=:,+@%", c):
		default:
			return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return w
}
