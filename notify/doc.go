// Package notify tells the operator that an ask is waiting at the
// broker's prompt when their eyes are elsewhere: it rings the terminal's
// bell and asks the terminal emulator for a desktop notification (the
// escapes of [TerminalAlert], which the prompt writes with its frame),
// sends a desktop notification with notify-send when a session bus is
// there, and runs the operator's own command (`broker serve --notify-cmd`)
// with the ask's summary in its environment.
//
// # Never in the way of serving
//
// [Notifier.Ask] never blocks: it counts the ask into the pending batch of
// each way of telling (a sink) and wakes that sink's goroutine. A sink
// delivers at most one notification per interval (a second by default):
// asks that arrive meanwhile, a flood of them included, are counted into
// the next one, which says how many there were ("40 new asks; the last:
// …"). So a sink holds one batch at most, whatever arrives, and nothing is
// dropped uncounted. A command that runs longer than its timeout is
// killed with its process group; its failures, and notify-send's, are
// reported once each (later ones are counted, not printed). Stop ends the
// goroutines and kills a command still running.
//
// # The child's text
//
// A note's fields come from a child and may be hostile. The prompt cleans
// them before they get here (prompt.Clean: escapes spelled out, blank
// runs counted); this package cleans them once more (every control,
// format or line-separating character spelled as \uXXXX, invalid UTF-8
// replaced, each field capped) before they go into an escape sequence, a
// notification or an environment variable. They never go into a command
// line: --notify-cmd is split into words when the broker starts, without
// a shell (see [ParseCommand]), and the ask reaches the command only
// through its environment:
//
//	COURIER_ASK_ID          the request id
//	COURIER_ASK_AGENT       the requesting agent's name
//	COURIER_ASK_SESSION     the requesting session
//	COURIER_ASK_SURFACE     the surface (bash, read, path_write, …)
//	COURIER_ASK_SUMMARY     one line: "'reviewer' asks bash: git push", or "3 new asks; the last: …"
//	COURIER_ASK_COUNT       how many asks this notification stands for
//	COURIER_ASKS_WAITING    how many asks the prompt held when the last arrived
//	COURIER_SERVING_SESSION the session the broker serves
//
// The fields of one ask are those of the newest in the batch.
package notify
