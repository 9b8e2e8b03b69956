// Package intent reads the user's intent from the transcript of the
// serving session: the file the agent the broker sits beside writes its
// conversation to (pi's session file, Claude Code's transcript, Codex's
// rollout), for the authorizer links the operator discloses
// "conversation" to. A judge needs it to tell a risky command the user
// asked for from one the agent improvised; it is the most sensitive
// evidence courier handles, so what reaches an Item is narrow.
//
// # What is admitted
//
// The text of the user's turns and of the assistant's, and the summaries
// a model wrote when the agent compacted its context (Item.Derived: a
// model's account of earlier turns, untrusted). Nothing else in the file
// reaches an Item: no tool call or its input, no tool result or command
// output, no thinking or reasoning, no image, no system or developer
// prompt, no environment or instructions file the harness injected in a
// user turn (see harness in text.go), and no field of an entry but its
// text: no id, session, model, path or timestamp of the file's own.
// The text is cleaned: terminal escape sequences, control characters
// other than newline and tab, and bidirectional formatting characters are
// removed. The harness's wording around a compaction summary (Claude
// Code's reminders and the path of its full transcript, Codex's
// instructions to the model) is removed where it is recognised.
//
// The conversation is the one the agent is in now: in a file that keeps
// every branch (pi, Claude Code), the path from the newest entry back,
// not the words of a branch the user abandoned; after a compaction, its
// summary and what it kept, as the agent's own context is rebuilt.
//
// # Reading a file others write
//
// The transcript is untrusted input: the agent writes it, and a tool's
// output or a repository's file in it can say anything. Each line must be
// one JSON object without repeated keys (internal/strictjson); a line
// that is not, or is longer than MaxLine, is skipped whole; a line whose
// newline is not written yet waits for it. Unknown fields and entry types
// are ignored, so a newer agent's file is read for what it shares with
// the formats known here.
//
// # Rules this package keeps
//
//   - Never blocks: the file is opened without following a final symlink
//     and without blocking on a FIFO, and read only if it is a regular
//     file; a Snapshot reads at most Options.MaxRead bytes, for at most a
//     quarter of a second.
//   - Bounded: the Budget (DefaultBudget) bounds what a Snapshot returns,
//     newest turns kept whole and the oldest cut first, a single turn
//     larger than the budget cut at its head (CutMark); what a Reader
//     holds between calls is bounded too.
//   - Incremental: a Snapshot reads only what was appended since the
//     last; a file truncated or replaced (another inode) is read anew.
//   - Honest: until a Reader has read to the end of the file, a Snapshot
//     returns nothing, never an older part of the conversation as if it
//     were all of it.
//
// This package knows nothing of authorizers or the review log: the
// broker turns Items into the evidence of the links that may see them,
// and no Item is ever written to a log.
package intent
