// Package prompt is the operator's prompt at the broker (`broker serve
// --terminal tty`): a [serve.Holder] that shows each ask the rules and the
// authorizer chain left open to the human at the broker's terminal, and
// returns the human's answer.
//
// # What the operator sees
//
// An ask shows who asks (agent and session), the surface, the command or
// path, the units of a bash command line, the match values when they
// differ from the displayed value, the child's working directory, why it
// reached a human (the rule that said ask, a floor, the child's asking
// units when the broker resolved no units, or, for a pi 20.x child's ask,
// "no access facts: pi 20.x child: the rules were not consulted" and what
// "yes, for this session" does then), the grants "the whole session" would
// record, and then, set
// apart, what the child wrote in its own words: its prompt message and the
// evidence of its payload. On a short terminal the context goes first and
// the command, the units, the grants and the answers stay.
//
// A command or path too long for its lines shows its head and its tail,
// with a marker line between them that says how many lines and characters
// it does not show: the end of a command is where a hostile child hides
// what it runs. v opens the whole view: the whole value, message and
// evidence, in a window that ↑/↓ and page up/down scroll, answering
// nothing; esc (or v, q, enter) goes back.
//
// # Text the child wrote
//
// The child's message and evidence could imitate the broker's own fields
// ("command    git status", "why … says allow"). Each is a block under a
// label of the broker's ("message from the subagent:"), and every screen
// line of it, wrapped lines included, starts with the gutter "│ " in the
// third column. No line of the broker's own starts so, and none of the
// child's starts anywhere else, so no line of it can pass for a field.
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
// "Yes, for this session" on an ask the broker admitted whole-session
// grants for (serve.Ask.Grants: suggestions that cover what was asked and
// are no wider than the broker's own) opens a second choice
// (docs/GLOSSARY.md, "grant"): 1, this subagent only (first, the default,
// and what Esc picks) is approved_for_session, which the child records; 2,
// the whole session is approved_for_serving_session, which the broker
// records and writes as plain approved. Under the whole session the scope
// choice lists every grant it records, each in full, wrapped, never cut;
// when the list needs more lines than the screen gives it, page down and
// page up scroll it, and 2 is refused until every line of it has been on
// screen. Nothing is recorded that the operator was not shown. An ask
// without admitted grants has nothing to scope, nor has one without access
// facts (a pi 20.x child's: a whole-session grant would never answer its
// next ask), so "yes, for this session" is approved_for_session at once,
// as in pi: the child records the grant it derives itself. Esc on the first choice decides nothing; in the
// reason it goes back.
//
// # Editing the whole-session grant
//
// In the scope choice, e opens a one-line editor on the grants the whole
// session would record, one after the other, each pre-filled with its
// pattern: enter accepts a pattern and moves to the next grant, and after
// the last the scope choice lists what the whole session records (to be
// seen again before 2); esc cancels the edit (the grants are as they were
// before it) and returns to the scope choice; ctrl-u clears the line. Only
// the pattern changes, never the surface, and what is typed is checked
// like the reason: printable characters only, at most 1000 of them, not
// blank. An edited pattern is accepted only if it still matches what its
// grant was suggested for (the bash units, or off bash the match values,
// that the suggested pattern matches), checked with the rules' own
// matcher; else the editor says why and stays open. The edited grants
// travel in the decision (decision.Decision.Grants) and the broker records
// them instead of the admitted ones.
//
// The edit applies to the whole session only. "This subagent only" always
// records the child's own suggestion: the child records it, and the wire
// answer has no grants to carry an edit to it.
//
// Every answer the operator gives is decided by [Decider],
// {kind: user, via: dialog}: seed 000's literal, which a pi 25.x child
// reads. That the tty prompt gave it is courier's own fact, carried in
// decision.Decision's Terminal ([TerminalTTY]) to the broker's review log.
//
// # Several asks
//
// The broker hands asks over with Hold, which makes what the screen will
// show of the ask (short strings cleaned and capped, long texts kept raw
// within bounds, see kept.go), keeps nothing of the ask itself, its
// payload included, queues it and returns at once; the answer comes back
// through a callback. A queued ask costs no goroutine and about 10 KiB, so
// thousands may wait. Decide is the same for a caller that waits.
//
// Asks are shown one at a time, and each requester (its session, else its
// agent name, else its process) takes its turn: when the ask on screen
// leaves, the next is the first ask of the next requester in turn, so a
// flood from one subagent never keeps another's ask waiting behind it
// (queue.go; docs/decisions/0013-prompt-fairness.md). The header says how
// many asks wait and from how many sessions. D denies, after a
// confirmation that says how many, the ask on screen and every ask that
// was waiting from its session, each a user's denial with a reason saying
// so. l lists the asks waiting, in the order they come, with who asks and
// what (list.go): ↑/↓ and page up/down move, enter shows the ask picked in
// place of the one on screen, which comes back right after it; the others
// keep their turns. An ask withdrawn (its child gave up, the prompt
// timeout passed, the broker is stopping) leaves the queue at once; if it
// was on screen, the next one shows from its start and a notice says why
// the other left. Keys pressed in the first moments of a new ask
// (DefaultArmDelay) are ignored, and the footer says so: a double press,
// or a key aimed at an ask that vanished, never answers the next one.
//
// # What the screen keeps
//
// Above the frame, when the screen has the rows, the last three asks that
// left it, one line each: when, how (the answer, or why it left
// unanswered), who and what (history.go). With a prompt timeout
// (Options.PromptTimeout, the broker's promptTimeoutMs), the header counts
// down the time the ask on screen has left, and the list that of each ask;
// the loop wakes when the seconds shown change, and redraws only the lines
// that changed. The idle line counts every decision of the run: the
// operator's, and, told by the broker (serve.Tally), the rules', the
// session grants', the chain's, and those nobody gave.
//
// # Noticing
//
// The operator's eyes are on the agent, not on the broker's pane. Each ask
// that reaches the prompt, shown or queued, rings the bell and writes the
// terminal's desktop notification escape (OSC 9 or 777, wrapped for tmux),
// in the same write as a frame and at its start; with a session bus,
// notify-send tells the desktop; and --notify-cmd runs the operator's
// command with the ask in its environment. Each goes at most once a
// second, a flood counted into one ("40 new asks; the last: …"), never in
// serving's way (package notify; docs/decisions/0018-noticing-asks.md).
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
// escape sequences, invalid UTF-8 and every invisible character (format
// characters, bidirectional controls, the Hangul fillers, the blank
// braille pattern, variation selectors, every space but U+0020) are shown
// escaped, and a run of blanks (spaces, tabs, line breaks, invisible
// characters) is shown as one marker with its count, ⟦1200 spaces⟧. The
// marker's brackets are escaped wherever the child wrote them, so a
// marker on screen is always the prompt's.
package prompt
