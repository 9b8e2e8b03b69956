package forward

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed6639df8c/courier/bashunits"
	"github.com/seed6639df8c/courier/rules"
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
	// suggestion for the surface (see rules.SuggestGrant).
	Grants []wire.SuggestedGrant
}

// NewRequestID mints pi's request id shape, perm-<uuid v4>, from the
// kernel's random bytes (readRandom).
func NewRequestID() (string, error) {
	var b [16]byte
	if err := readRandom(b[:]); err != nil {
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
	matchValues, boundary, err := a.facts(units)
	if err != nil {
		return wire.Request{}, fmt.Errorf("path %q: %w", a.Value, err)
	}
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
		// The suggestion rules live with the rules, where the broker
		// admits a suggestion only if it is no wider than theirs.
		if units != nil {
			grants = rules.SuggestBashGrants(units)
		} else if g := rules.SuggestGrant(a.Surface, matchValues[0]); g.Pattern != "" {
			grants = []wire.SuggestedGrant{g}
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
func (a Ask) facts(units []bashunits.Unit) (matchValues []string, boundary string, err error) {
	add := func(v string) {
		for _, have := range matchValues {
			if have == v {
				return
			}
		}
		matchValues = append(matchValues, v)
	}
	if isPathSurface(a.Surface) {
		raw := a.Value
		if !filepath.IsAbs(raw) && a.Cwd != "" {
			raw = a.Cwd + "/" + raw
		}
		abs := filepath.Clean(raw)
		add(abs)
		add(a.Value)
		// The boundary is where a write lands, also for a file that does
		// not exist yet (a new file in a linked directory, a dangling
		// link), where filepath.EvalSymlinks fails. A `..` after a link
		// climbs from the link's target, as the kernel reads it; the
		// lexical reading stays a match value, so a deny of either place
		// denies. A link loop keeps the path as spelled: nothing lands.
		canonical := abs
		if filepath.IsAbs(abs) {
			resolved, err := ResolvePath(abs)
			switch {
			case err == nil:
				canonical = resolved
			case tooLongToLook(err):
				// Where the write lands is unknown: no boundary an
				// allow could match.
				return nil, "", err
			}
		}
		add(canonical)
		boundary = canonical
		// Only a `..` can make the physical reading differ from the
		// lexical one; without any, resolving raw is the same walk again
		// (an lstat per component, on the child's ask path).
		if filepath.IsAbs(raw) && strings.Contains(raw, "..") {
			physical, err := ResolvePath(raw)
			if tooLongToLook(err) {
				return nil, "", err
			}
			if err == nil && physical != canonical {
				add(physical)
				boundary = physical
			}
		}
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
	return matchValues, boundary, nil
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
