// Package forward is the requesting side of courier: it forwards one
// permission ask to a parent session's broker through the mailbox and
// waits for the decision. The child command is a thin shell around it, and
// a relaying broker uses it to pass an ask one hop further up.
//
// # Never hang, never pretend
//
// Forward always returns a decision. When nobody answers (no parent, a
// parent not serving for Grace, the overall Timeout, an unreadable answer)
// the decision is a denial whose decider is provenance.Unavailable with
// pi's exact sentence as the reason, never a user's denial; the request is
// deleted first, so a late answer cannot arrive for an ask already given up.
//
// # Event-driven
//
// The watch on responses/ is armed before the request is written, so the
// answer cannot slip in between, and the wait is woken by inotify (or the
// polling fallback), not by a 250 ms tick.
package forward
