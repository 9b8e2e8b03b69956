package forward

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seed6639df8c/courier/bashunits"
	"github.com/seed6639df8c/courier/wire"
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
	Grants []wire.SuggestedGrant
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
func (a Ask) Request(id, target string, createdAtMillis int64) (wire.Request, error) {
	if a.Session == "" || a.Agent == "" || a.Surface == "" || a.Value == "" {
		return wire.Request{}, fmt.Errorf("an ask needs a session, an agent, a surface and a value")
	}
	tool := a.Tool
	if tool == "" {
		tool = a.Surface
	}
	var units []bashunits.Unit
	if a.Surface == "bash" {
		units = bashunits.Split(a.Value)
	}
	matchValues, boundary := a.facts(units)
	intent := &wire.AccessIntent{
		Surface:      a.Surface,
		MatchValues:  matchValues,
		RequesterCwd: a.Cwd,
		Principal:    wire.Principal{SessionID: a.Session, AgentName: a.Agent},
		Floor:        a.Floor,
	}
	if boundary != "" {
		intent.BoundaryValue = &boundary
	}
	setUnits(intent, units)
	grants := a.Grants
	if len(grants) == 0 {
		if units != nil {
			grants = SuggestBashGrants(units)
		} else {
			grants = []wire.SuggestedGrant{SuggestGrant(a.Surface, matchValues[0])}
		}
	}
	var approval *wire.SessionApproval
	if len(grants) > 0 {
		approval = &wire.SessionApproval{Grants: grants}
	}
	return wire.Request{
		ID:                 id,
		CreatedAt:          createdAtMillis,
		RequesterSessionID: a.Session,
		TargetSessionID:    target,
		RequesterAgentName: a.Agent,
		Message:            Message(a.Agent, tool, a.Value),
		Source:             wire.SourceToolCall,
		Surface:            tool,
		Value:              a.Value,
		SessionApproval:    approval,
		AccessIntent:       intent,
		RequesterPID:       os.Getpid(),
	}, nil
}

// facts returns the match values and boundary value the way pi's gate
// fixes them: on path surfaces the absolute path, the value as given and
// the canonical (symlink-resolved) path, with the canonical path as the
// boundary; on bash each unit of the command line; elsewhere the value
// itself.
func (a Ask) facts(units []bashunits.Unit) (matchValues []string, boundary string) {
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
	} else if units != nil {
		for _, u := range units {
			add(u.Command)
		}
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

// FillBashUnits gives a bash access intent that carries no asking units
// the ones pi's gate would send: every unit of every match value, each
// with its floor (or the intent's own), and the intent's floor set from
// the first floored unit when it has none, for a parent that reads only
// the floor. It leaves any other intent alone, and returns whether it
// changed ai. A relayed or hand-written request thus reaches a parent
// judged unit by unit, whoever built it.
func FillBashUnits(ai *wire.AccessIntent) bool {
	if ai == nil || ai.Surface != "bash" || len(ai.AskingUnits) > 0 || len(ai.MatchValues) == 0 {
		return false
	}
	var units []bashunits.Unit
	for _, v := range ai.MatchValues {
		units = append(units, bashunits.Split(v)...)
	}
	setUnits(ai, units)
	return true
}

// setUnits writes units as ai's asking units; the intent's floor, when it
// has one, applies to every unit without its own.
func setUnits(ai *wire.AccessIntent, units []bashunits.Unit) {
	if len(units) == 0 {
		return
	}
	ai.AskingUnits = make([]wire.AskingUnit, len(units))
	first := ""
	for i, u := range units {
		f := u.Floor
		if f == "" {
			f = ai.Floor
		}
		if first == "" {
			first = u.Floor
		}
		ai.AskingUnits[i] = wire.AskingUnit{Command: u.Command, Floor: f}
	}
	if ai.Floor == "" {
		ai.Floor = first
	}
}

// SuggestBashGrants is the "yes, for this session" suggestion for a bash
// command line: one grant per unit a rule may judge (a floored unit runs
// what no pattern can see, so it gets none), each built from that unit
// alone (see SuggestGrant), without repeats. It is empty when no unit
// yields a grant.
func SuggestBashGrants(units []bashunits.Unit) []wire.SuggestedGrant {
	var out []wire.SuggestedGrant
	for _, u := range units {
		if u.Floor != "" {
			continue
		}
		p := suggestBash(u.Command)
		if p == "" || slices.ContainsFunc(out, func(g wire.SuggestedGrant) bool { return g.Pattern == p }) {
			continue
		}
		out = append(out, wire.SuggestedGrant{Surface: "bash", Pattern: p})
	}
	return out
}

// subcommandTools take a subcommand as their second word: their
// suggestion keeps it (`git status --short` → `git status *`,
// `terraform apply` → `terraform apply *`, never `terraform *`).
var subcommandTools = map[string]bool{
	"git": true, "npm": true, "pnpm": true, "yarn": true, "bun": true, "deno": true,
	"cargo": true, "go": true, "rustup": true, "dotnet": true, "mvn": true, "gradle": true,
	"docker": true, "podman": true, "kubectl": true, "helm": true, "terraform": true,
	"tofu": true, "pulumi": true, "aws": true, "gcloud": true, "az": true, "gh": true,
	"pip": true, "pip3": true, "uv": true, "poetry": true, "pipx": true, "conda": true,
	"make": true, "systemctl": true, "brew": true, "apt": true, "apt-get": true,
	"dnf": true, "yum": true, "nix": true, "composer": true, "bundle": true, "gem": true,
	"rails": true, "swift": true, "hg": true, "svn": true, "jj": true,
}

// scriptRunners take a script name after "run": their suggestion keeps the
// script (`npm run dev` → `npm run dev*`).
var scriptRunners = map[string]bool{"npm": true, "pnpm": true, "yarn": true, "bun": true}

// SuggestGrant is the default "yes, for this session" grant for an ask,
// following pi's suggestions: on bash a command-arity table (`git status
// --short` → `git status *`, `npm run dev` → `npm run dev*`, unknown
// commands → `cmd *`; see suggestBash); on path surfaces the directory
// glob (`src/*`); elsewhere the value itself.
func SuggestGrant(surface, value string) wire.SuggestedGrant {
	switch {
	case surface == "bash":
		return wire.SuggestedGrant{Surface: surface, Pattern: suggestBash(value)}
	case isPathSurface(surface):
		dir := filepath.Dir(value)
		if dir == string(filepath.Separator) {
			return wire.SuggestedGrant{Surface: surface, Pattern: "/*"}
		}
		return wire.SuggestedGrant{Surface: surface, Pattern: dir + "/*"}
	}
	return wire.SuggestedGrant{Surface: surface, Pattern: value}
}

// suggestBash builds the pattern for one unit, from its leading plain
// words only: a word with a quote, an escape, an expansion, a glob or an
// assignment could make the pattern mean more (or other) than the unit.
// A subcommand tool keeps its subcommand; one whose second word is not a
// plain subcommand (`git -C x status`) gets the unit itself as the
// pattern, since `git *` would span every subcommand. It is empty when no
// safe pattern exists.
func suggestBash(unit string) string {
	words := strings.Fields(unit)
	if len(words) == 0 || !plainWord(words[0]) || strings.HasPrefix(words[0], "-") {
		return ""
	}
	name := words[0]
	switch {
	case len(words) >= 3 && scriptRunners[name] && words[1] == "run" && plainWord(words[2]) && !strings.HasPrefix(words[2], "-"):
		return strings.Join(words[:3], " ") + "*"
	case subcommandTools[name] && len(words) >= 2:
		if plainWord(words[1]) && !strings.HasPrefix(words[1], "-") {
			return strings.Join(words[:2], " ") + " *"
		}
		if !slices.ContainsFunc(words, func(w string) bool { return !plainWord(w) }) {
			return strings.Join(words, " ")
		}
		return ""
	}
	return name + " *"
}

// plainWord reports whether w is made only of characters that mean
// themselves both to bash and to a pattern.
func plainWord(w string) bool {
	for _, c := range w {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.ContainsRune("._/+@%:,-", c):
		default:
			return false
		}
	}
	return w != ""
}
