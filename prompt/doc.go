// Package prompt is the operator's prompt at the broker (`broker serve
// --terminal tty`): a [serve.Holder] that shows each ask the rules and the
// authorizer chain left open to the human at the broker's terminal, and
// returns the human's answer.
//
// # What the operator sees
//
// An ask shows who asks (agent and session), the surface, the command or
// path (wrapped, and when cut, saying how long it was), the units of a
// bash command line, the match values when they differ from the displayed
// value, the child's working directory, why it reached a human (the rule
// that said ask, a floor, the child's asking units when the broker
// resolved no units, or "no access facts: an older child"), the child's
// prompt message, the evidence of its payload, and the grant a session
// answer would record. On a short terminal the context goes first and the
// command, the units, the grant and the answers stay.
//
// # Units
//
// The broker's rules judge a bash command line unit by unit (see
// bashunits). When a line has several units, or a floor holds one, the
// prompt lists every unit in source order, one line each: its answer, its
// command (cleaned like all untrusted text) and what decided it:
//
//	units      allow  git status  global rule "git status *" (config.json:8:7)
//	           ask    sh          floor <opaque-bash-wrapper>: a shell reading its commands from stdin: sh; …
//
// Nothing the operator approves is hidden: the units are never cut or
// dropped for a short screen. When they need more lines than the screen
// gives them, they show a window and a last line saying which units it
// holds ("↓ units 1–9 of 40 shown (38 allow, 2 ask)"), and page down and
// page up scroll it, at any point of the answer.
//
// # Answers
//
// As pi's dialog, with one key each, or ↑/↓ and enter:
//
//	y  yes, once                    approved
//	s  yes, for this session        with grants: the scope choice below; without: approved_for_session
//	n  no                           denied
//	r  no, with a reason            denied_with_reason; the typed reason must not be blank
//
// "Yes, for this session" on an ask that carries the child's grant
// suggestion (sessionApproval) opens a second choice that shows the exact
// patterns (docs/GLOSSARY.md, "grant"): 1, this subagent only (first, the default, and what
// Esc picks) is approved_for_session, which the child records; 2, the whole
// session is approved_for_serving_session, which the broker records and
// writes as plain approved. An ask without grants has nothing to scope, so
// "yes, for this session" is approved_for_session at once, as in pi: the
// child records the grant it derives itself. Esc on the first choice
// decides nothing; in the reason it goes back.
//
// # Editing the whole-session grant
//
// In the scope choice, e opens a one-line editor on the grants the whole
// session would record, one after the other, each pre-filled with its
// pattern: enter accepts a pattern and moves to the next grant, and after
// the last the scope choice lists what the whole session records; esc
// cancels the edit (the grants are as they were before it) and returns to
// the scope choice; ctrl-u clears the line. Only the pattern changes,
// never the surface, and what is typed is checked like the reason:
// printable characters only, at most 1000 of them, not blank. An edited
// pattern is accepted only if it still matches what its grant was
// suggested for (the bash units, or off bash the match values, that the
// suggested pattern matches), checked with the rules' own matcher; else
// the editor says why and stays open. The edited grants travel in the
// decision (decision.Decision.Grants) and the broker records them instead
// of the suggestion.
//
// The edit applies to the whole session only. "This subagent only" always
// records the child's own suggestion: the child records it, and the wire
// answer has no grants to carry an edit to it.
//
// Every answer is decided by {kind: user, via: terminal}.
//
// # Several asks
//
// The broker hands asks over with Hold, which queues the ask and returns
// at once; the answer comes back through a callback. A queued ask costs no
// goroutine, and nothing is made from it (its cleaned text, its layout)
// until it reaches the screen, so thousands may wait. Decide is the same
// for a caller that waits. Asks are shown one at a time, in arrival order,
// with the count of those waiting. An ask withdrawn (its child gave up,
// the prompt timeout passed, the broker is stopping) leaves the queue at
// once; if it was on screen, the next one shows from its start and a
// notice says why the other left. Keys pressed
// in the first moments of a new ask (DefaultArmDelay) are ignored, and
// the footer says so: a double press, or a key aimed at an ask that
// vanished, never answers the next one.
//
// # The terminal
//
// Open requires stdin to be a terminal, then opens /dev/tty on its own,
// puts it in a mode without echo or line editing (output processing and
// Ctrl-C are kept: Ctrl-C stops the broker as usual) and draws the prompt
// on the bottom lines of the screen, below a scrolling region that holds
// everything else written to the terminal, the broker's stderr included;
// see screen for why that keeps diagnostics from corrupting the prompt.
// Close restores the terminal. Only plain VT100/xterm sequences are used,
// so it works in tmux, screen and over ssh (-t).
//
// # Untrusted text
//
// Every string a request carries comes from a child and may be hostile.
// All of it goes through [Clean] before it reaches the screen: controls,
// escape sequences, bidirectional overrides and invalid UTF-8 are shown
// escaped, and lengths are capped.
package prompt
