// Command broker runs beside a parent session and answers the permission
// asks its subagents forward through the mailbox.
//
// Output rules: results go to stdout; diagnostics go to stderr prefixed
// "broker: ", lower-case, no trailing period. Exit status 0 is success and
// 2 a usage or configuration error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/audit"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/plugins/confine"
)

const usage = `usage: broker <command> [flags]

Commands:
  serve   serve a parent session's mailbox: rules, then plugins, then the terminal
  check   explain which rule decides an ask, and why
  audit   census of decisions in a review log, by who decided them
  grants  list or revoke a session's whole-session grants
  plugin  pin an authorizer plugin binary's sha256 into the config

Run 'broker <command> -h' for the flags of a command.
`

// exitUsage is the status for a usage or configuration error.
const exitUsage = 2

func main() { os.Exit(broker()) }

// broker is main, to its exit status; the tests run it as main runs it.
func broker() int {
	// The hidden subcommand that runs a confined plugin's init: before
	// the signal handlers, so that a signal kills it like any init.
	if len(os.Args) > 1 && os.Args[1] == confine.Command {
		return confine.Main(os.Args[2:], os.Stdout, os.Stderr)
	}
	// Serving over NATS is the NATS build's (natsFirst): run before the
	// descriptors are sealed and the signal handlers installed, which
	// the exec must not see.
	if code, ran := natsFirst(os.Args[1:], os.Stderr); ran {
		return code
	}
	// Nothing the broker inherited without close-on-exec may reach a
	// plugin or any other process it starts.
	if err := confine.SealInherited(); err != nil {
		fmt.Fprintf(os.Stderr, "broker: warning: inherited file descriptors may reach plugins: %v\n", err)
	}
	// SIGHUP too: a dropped ssh session must still answer what is pending.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "audit":
		return runAudit(ctx, args[1:], stdin, stdout, stderr)
	case "serve":
		return runServe(ctx, args[1:], stderr)
	case "check":
		return runCheck(ctx, args[1:], stdout, stderr)
	case "plugin":
		return runPlugin(args[1:], stdout, stderr)
	case "grants":
		return runGrants(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "broker: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

func runAudit(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("broker audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	logPath := fs.String("log", "", "review log to read (courier's or pi's JSON lines); - reads stdin; default broker serve's, $PI_CODING_AGENT_DIR/courier/review.jsonl")
	asJSON := fs.Bool("json", false, "print the census as JSON instead of a table (with --list: one JSON object per decision)")
	shadow := fs.Bool("shadow", false, "print each shadow link's verdicts against the final decisions instead of the census")
	list := listFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: broker audit [--log FILE] [--json]
       broker audit --list [--follow] [--decider D] [--agent A] [--surface S]
                    [--outcome approved|denied] [--since 1h|TIME] [--log FILE] [--json]
       broker audit --shadow [--log FILE] [--json]

Reads a review log, courier's or pi-permission-system's (same event names),
and prints how many terminal decisions each decider made: user, each
authorizer link by name, rule, session approval, yolo, infrastructure read,
unavailable, gate error, and "no decider recorded" for lines written before
decidedBy existed. A forwarded decision counts under its inner decider and
also in the forwarded row. Lines that are not JSON objects are counted and
reported, never fatal. Lines are joined into decisions by requestId and,
where they carry one, the request's digest (requestSha256), so an id used
again after a broker's restart counts again.

courier rotates its log at reviewLogMaxBytes, keeping one rotation:
--log FILE reads FILE.1 first when there is one, then FILE, and says which
it read. Older lines are gone. --log - reads only what comes on stdin.
Without --log it reads broker serve's default log,
$PI_CODING_AGENT_DIR/courier/review.jsonl, and says so on stderr.

--list prints the decisions instead, one per line, newest last: time,
decider, outcome, agent, surface, value (a bash ask's units joined by
"; "), request id; "?" for what a line does not say (lines written
before the broker logged what was asked). The lines of one ask are
listed once. Text from the log is escaped for the terminal. --follow
keeps listing what is logged after, following a rotation, until
interrupted.

--shadow prints, for each link run in shadow mode, its verdicts against
the final decision of the same ask: a table of allow, deny and defer
against approved, denied, unavailable (nobody could answer) and no
decision; how many asks it would have decided (allow + deny); how many of
those a human decided at the prompt, and how many otherwise than the
link; how often its failure policy answered; its defers by code
(docs/JUDGE.md).

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "broker audit: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if err := list.check(); err != nil {
		fmt.Fprintf(stderr, "broker audit: %v\n", err)
		return exitUsage
	}
	if *logPath == "" {
		path, err := defaultReviewLogPath()
		if err != nil {
			fmt.Fprintf(stderr, "broker audit: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(stderr, "broker audit: reading %s, broker serve's default log (--log FILE reads another)\n", path)
		*logPath = path
	}
	if *shadow {
		return runAuditShadow(list, *logPath, *asJSON, stdin, stdout, stderr)
	}
	if list.on() {
		return runAuditList(ctx, list, *logPath, *asJSON, stdin, stdout, stderr)
	}
	var report audit.Report
	var err error
	if *logPath == "-" {
		report, err = audit.Census(stdin)
	} else {
		if _, serr := os.Stat(*logPath); serr != nil {
			fmt.Fprintf(stderr, "broker audit: %v\n", serr)
			return exitUsage
		}
		report, err = audit.CensusFile(*logPath)
	}
	if err != nil {
		fmt.Fprintf(stderr, "broker audit: reading %s: %v\n", *logPath, err)
		return 1
	}
	write := report.WriteTable
	if *asJSON {
		write = report.WriteJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "broker audit: %v\n", err)
		return 1
	}
	return 0
}

// writeJSON prints v indented, leaving <, > and & as they are (floor
// sentinels such as <opaque-bash-wrapper> must read as written).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// What broker serve settles before it serves, beside the flags.

// defaultReviewLogPath is where broker serve logs without --log, and so
// what broker audit reads without it: <agent dir>/courier/review.jsonl.
func defaultReviewLogPath() (string, error) {
	dir, err := mailbox.AgentDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "courier", "review.jsonl"), nil
}

// defaultTerminal is the terminal when --terminal is not given: the
// operator's prompt when a human is at this terminal, which is when
// standard input is a terminal whose foreground is this broker (a broker
// started with & would be stopped by the terminal the moment its prompt
// read a key); else deny. why says which, for the startup line.
func defaultTerminal(stdin *os.File) (kind, why string) {
	fd := int(stdin.Fd())
	foreground, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	switch {
	case err != nil:
		return "deny", "default: no terminal on stdin"
	case foreground != unix.Getpgrp():
		return "deny", "default: in the background of its terminal"
	}
	return "tty", "default: a terminal on stdin"
}

// releaseLock gives the session up once serving has ended.
func releaseLock(lock *mailbox.ServingLock, stderr io.Writer) {
	if err := lock.Release(); err != nil {
		fmt.Fprintf(stderr, "broker: %v\n", err)
	}
}
