// Package agenthook is courier's adapter for the permission hooks of
// Claude Code and Codex CLI: it reads one hook event (PermissionRequest,
// or PreToolUse where the operator wires it), turns the tool call into the
// asks pi's child gate would forward (package forward), and renders the
// broker's decision as the exact bytes the agent honours.
//
// # What it never does
//
// It never allows on a doubt. An event it cannot read, a tool input it
// cannot map (an apply_patch whose files cannot be parsed), a subagent id
// that could not name a mailbox session, a broker that is not there or
// does not answer: each gives no decision (empty stdout, exit 0), so the
// agent's own flow decides (its prompt, or its own deny where nobody can
// be prompted); an operator may ask for a deny instead (UnavailableDeny).
// Several asks for one event (one per file an apply_patch touches, one
// per place a path can name: `~`, links, `..` after a link) allow only
// when every one is allowed; any deny denies. A panic while asking is an
// ask nobody answered.
//
// # Who asks
//
// A subagent's call carries agent_id in both agents: that id is the
// requesting session (its "this subagent only" grants are kept under it)
// and agent_type its name. The main agent's calls carry none; they are
// left to the agent (MainSkip) unless the operator forwards them too.
// The serving session is the operator's choice, the same for every agent
// (DefaultParent unless a flag or $COURIER_SESSION names another), so
// nobody needs the agent's own session id in advance.
//
// See docs/hooks.md for the set-up, and
// docs/decisions/0019-agent-hook-adapter.md for the choices.
package agenthook
