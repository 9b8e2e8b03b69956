package forward

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed6639df8c/courier/mailbox"
)

// Ask is one permission ask as a child's gate states it, before it becomes
// a request file.
type Ask struct {
	// Session is the asking (child) session's id.
	Session string
	// Agent is the asking agent's name.
	Agent string
	// Surface is the gate surface: bash, path_read, path_write,
	// external_directory_read, a tool name...
	Surface string
	// Value is what is asked for: the command, the path, the tool input.
	Value string
	// Tool is the display surface (the tool's name, e.g. "write"); empty
	// means Surface.
	Tool string
	// Cwd is the child's working directory; relative paths resolve there.
	Cwd string
	// Match adds match values beyond the ones derived from Value.
	Match []string
	// Boundary overrides the boundary value (the canonical path on path
	// surfaces).
	Boundary string
	// Floor is a synthetic floor sentinel that keeps a rule allow an ask.
	Floor string
	// Grants are the session grants to suggest; empty means the default
	// suggestion for the surface (see SuggestGrant).
	Grants []mailbox.Grant
}

// NewRequestID mints pi's request id shape, perm-<uuid v4>, from
// crypto/rand.
func NewRequestID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("minting a request id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("perm-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// Request builds the request a pi 25.x gate would forward for a: the
// child-fixed access facts, the display projection, a readable message
// (a 20.7.3 parent deletes a request without one), the suggested session
// grants, and the child's pid.
func (a Ask) Request(id, target string, createdAtMillis int64) (mailbox.Request, error) {
	if a.Session == "" || a.Agent == "" || a.Surface == "" || a.Value == "" {
		return mailbox.Request{}, fmt.Errorf("an ask needs a session, an agent, a surface and a value")
	}
	tool := a.Tool
	if tool == "" {
		tool = a.Surface
	}
	matchValues, boundary := a.facts()
	intent := &mailbox.AccessIntent{
		Surface:      a.Surface,
		MatchValues:  matchValues,
		RequesterCwd: a.Cwd,
		Principal:    mailbox.Principal{SessionID: a.Session, AgentName: a.Agent},
		Floor:        a.Floor,
	}
	if boundary != "" {
		intent.BoundaryValue = &boundary
	}
	grants := a.Grants
	if len(grants) == 0 {
		grants = []mailbox.Grant{SuggestGrant(a.Surface, matchValues[0])}
	}
	return mailbox.Request{
		ID:                 id,
		CreatedAt:          createdAtMillis,
		RequesterSessionID: a.Session,
		TargetSessionID:    target,
		RequesterAgentName: a.Agent,
		Message:            Message(a.Agent, tool, a.Value),
		Source:             mailbox.SourceToolCall,
		Surface:            tool,
		Value:              a.Value,
		SessionApproval:    &mailbox.SessionApproval{Grants: grants},
		AccessIntent:       intent,
		RequesterPID:       os.Getpid(),
	}, nil
}

// facts returns the match values and boundary value the way pi's gate
// fixes them: on path surfaces the absolute path, the value as given and
// the canonical (symlink-resolved) path, with the canonical path as the
// boundary; elsewhere the value itself.
func (a Ask) facts() (matchValues []string, boundary string) {
	add := func(v string) {
		for _, have := range matchValues {
			if have == v {
				return
			}
		}
		matchValues = append(matchValues, v)
	}
	if isPathSurface(a.Surface) {
		abs := a.Value
		if !filepath.IsAbs(abs) && a.Cwd != "" {
			abs = filepath.Join(a.Cwd, abs)
		}
		abs = filepath.Clean(abs)
		add(abs)
		add(a.Value)
		canonical := abs
		if resolved, err := filepath.EvalSymlinks(abs); err == nil {
			canonical = resolved
		}
		add(canonical)
		boundary = canonical
	} else {
		add(a.Value)
	}
	for _, m := range a.Match {
		add(m)
	}
	if a.Boundary != "" {
		boundary = a.Boundary
	}
	return matchValues, boundary
}

func isPathSurface(surface string) bool {
	return strings.HasPrefix(surface, "path") || strings.HasPrefix(surface, "external_directory")
}

// Message is the prompt text a human sees for the ask, in the sentence
// shape of pi 20.7.3's forwarded message.
func Message(agent, tool, value string) string {
	switch {
	case tool == "bash":
		return fmt.Sprintf("Agent '%s' requested bash command '%s'. Allow this command?", agent, value)
	case isPathSurface(tool):
		return fmt.Sprintf("Agent '%s' requested %s access to path '%s'. Allow this access?", agent, tool, value)
	}
	return fmt.Sprintf("Agent '%s' requested tool '%s' for '%s'. Allow this?", agent, tool, value)
}

// subcommandTools take a subcommand: their suggestion keeps two words
// (`git status --short` → `git status *`).
var subcommandTools = map[string]bool{
	"git": true, "npm": true, "pnpm": true, "yarn": true, "bun": true, "cargo": true,
	"go": true, "docker": true, "kubectl": true, "gh": true, "pip": true, "uv": true,
	"make": true, "systemctl": true, "brew": true, "apt": true, "apt-get": true,
}

// scriptRunners take a script name after "run": their suggestion keeps the
// script (`npm run dev` → `npm run dev*`).
var scriptRunners = map[string]bool{"npm": true, "pnpm": true, "yarn": true, "bun": true}

// SuggestGrant is the default "yes, for this session" grant for an ask,
// following pi's suggestions: on bash a command-arity table (`git status
// --short` → `git status *`, `npm run dev` → `npm run dev*`, unknown
// commands → `cmd *`); on path surfaces the directory glob (`src/*`);
// elsewhere the value itself.
func SuggestGrant(surface, value string) mailbox.Grant {
	switch {
	case surface == "bash":
		return mailbox.Grant{Surface: surface, Pattern: suggestBash(value)}
	case isPathSurface(surface):
		dir := filepath.Dir(value)
		if dir == string(filepath.Separator) {
			return mailbox.Grant{Surface: surface, Pattern: "/*"}
		}
		return mailbox.Grant{Surface: surface, Pattern: dir + "/*"}
	}
	return mailbox.Grant{Surface: surface, Pattern: value}
}

func suggestBash(command string) string {
	words := strings.Fields(command)
	if len(words) == 0 {
		return "*"
	}
	// A wildcard in the command would widen the grant beyond what was
	// asked; such words end the prefix.
	prefix := words[:1]
	if len(words) >= 3 && scriptRunners[words[0]] && words[1] == "run" && !strings.ContainsAny(words[2], "*?") {
		return strings.Join(words[:3], " ") + "*"
	}
	if len(words) >= 2 && subcommandTools[words[0]] && !strings.HasPrefix(words[1], "-") && !strings.ContainsAny(words[1], "*?") {
		prefix = words[:2]
	}
	if strings.ContainsAny(prefix[0], "*?") {
		return command
	}
	return strings.Join(prefix, " ") + " *"
}
