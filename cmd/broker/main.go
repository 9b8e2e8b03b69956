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
	"syscall"

	"github.com/seed6639df8c/courier/audit"
)

const usage = `usage: broker <command> [flags]

Commands:
  serve   serve a parent session's mailbox: rules, then plugins, then the terminal
  check   explain which rule decides an ask, and why
  audit   census of decisions in a review log, by who decided them
  grants  list or revoke a session's whole-session grants

Run 'broker <command> -h' for the flags of a command.
`

// exitUsage is the status for a usage or configuration error.
const exitUsage = 2

func main() {
	// SIGHUP too: a dropped ssh session must still answer what is pending.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "audit":
		return runAudit(args[1:], stdin, stdout, stderr)
	case "serve":
		return runServe(ctx, args[1:], stderr)
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "grants":
		return runGrants(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "broker: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}

func runAudit(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("broker audit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	logPath := fs.String("log", "", "review log to read (courier's or pi's JSON lines); - reads stdin")
	asJSON := fs.Bool("json", false, "print the census as JSON instead of a table")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: broker audit --log FILE [--json]

Reads a review log, courier's or pi-permission-system's (same event names),
and prints how many terminal decisions each decider made: user, each
authorizer link by name, rule, session approval, yolo, infrastructure read,
unavailable, gate error, and "no decider recorded" for lines written before
decidedBy existed. A forwarded decision counts under its inner decider and
also in the forwarded row. Lines that are not JSON objects are counted and
reported, never fatal.

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
	if *logPath == "" {
		fmt.Fprintln(stderr, "broker audit: --log FILE is required")
		return exitUsage
	}
	in := stdin
	if *logPath != "-" {
		f, err := os.Open(*logPath)
		if err != nil {
			fmt.Fprintf(stderr, "broker audit: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		in = f
	}
	report, err := audit.Census(in)
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
