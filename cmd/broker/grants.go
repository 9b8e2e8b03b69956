package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/internal/flagargs"
	"github.com/seed6639df8c/courier/mailbox"
)

const grantsUsage = `usage: broker grants list --session ID [--root DIR] [--vouched-uid UID] [--json]
       broker grants revoke --session ID [--root DIR] [--vouched-uid UID] (PATTERN | --all) [--surface S]

Shows and takes back the whole-session grants of session ID: what the
operator answered "yes, for the whole session" at the broker's prompt. The
broker journals them in <root>/courier/grants/broker/<session>.json and
answers every later ask they match without asking anyone, across restarts.

  list    print each grant: its surface, its pattern (quoted) and the
          journal it is in; --json prints one JSON object
  revoke  remove the grants whose pattern is PATTERN, exactly as list
          prints it (without the quotes), on every surface that has it;
          --surface S removes only the one on surface S; --all removes
          every grant (every grant on S, with --surface)

A broker serving the session takes a revoke in within about a second, and
says so on stderr and in its review log; a broker that is not running
reads the journal when it starts. A pattern that matches no grant is an
error that lists the grants there are.

With --vouched-uid UID (a uid or a user name), the grants are those the
broker vouched for a child in the isolation mode (broker serve
--ask-group): what the operator answered "yes, for this subagent only" to
an ask of the user UID, kept by the broker in
<root>/courier/vouched/<UID>/<session>.json, and --session ID is that
child's (the requesting) session. Only the broker's user (the root's
owner) may revoke them: run it as that user (sudo -u USER broker grants
revoke ...); a journal it did not write is refused.

The mailbox root is --root, else $PI_CODING_AGENT_DIR (default ~/.pi/agent)
+ /sessions/permission-forwarding, as for broker serve.

Exit status: 0 done; 2 for a usage or configuration error (no such grant;
a journal that is unsafe or malformed, named in the message); 1 if the
journal could not be locked or written (it is left as it was).
`

func runGrants(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, grantsUsage)
		return exitUsage
	}
	switch args[0] {
	case "list":
		return runGrantsList(args[1:], stdout, stderr)
	case "revoke":
		return runGrantsRevoke(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, grantsUsage)
		return 0
	}
	fmt.Fprintf(stderr, "broker grants: unknown command %q, expected list or revoke\n\n%s", args[0], grantsUsage)
	return exitUsage
}

// grantsFlagSet is the flag set of one grants command, with the flags
// both take; journal opens the journal they name.
func grantsFlagSet(name string, stderr io.Writer) (fs *flag.FlagSet, journal func() (*grants.Journal, error)) {
	fs = flag.NewFlagSet("broker grants "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, grantsUsage+"\nFlags of broker grants "+name+":\n"); fs.PrintDefaults() }
	session := fs.String("session", "", "the serving session whose grants these are (required); with --vouched-uid, the requesting child's session")
	root := fs.String("root", "", "mailbox root; default $PI_CODING_AGENT_DIR/sessions/permission-forwarding")
	vouchedUID := fs.String("vouched-uid", "", "the isolation mode: the grants the broker vouched for the children of this user (a uid or a name), not the serving session's")
	return fs, func() (*grants.Journal, error) {
		if *session == "" {
			return nil, errors.New("--session ID is required: the serving session whose grants these are")
		}
		rootDir, err := mailbox.ResolveRoot(*root)
		if err != nil {
			return nil, err
		}
		if *vouchedUID != "" {
			return openVouched(rootDir, *vouchedUID, *session, name == "revoke")
		}
		return grants.Open(mailbox.Layout{Root: rootDir}, grants.Broker, *session)
	}
}

func runGrantsList(args []string, stdout, stderr io.Writer) int {
	fs, journal := grantsFlagSet("list", stderr)
	asJSON := fs.Bool("json", false, "print the grants as one JSON object")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		return grantsError(stderr, "list", fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	j, err := journal()
	if err != nil {
		return grantsError(stderr, "list", err)
	}
	l, err := j.List()
	if err != nil {
		return grantsError(stderr, "list", err)
	}
	write := l.WriteTable
	if *asJSON {
		write = l.WriteJSON
	}
	if err := write(stdout); err != nil {
		return grantsError(stderr, "list", err)
	}
	return 0
}

func runGrantsRevoke(args []string, stdout, stderr io.Writer) int {
	fs, journal := grantsFlagSet("revoke", stderr)
	var sel grants.Selector
	fs.BoolVar(&sel.All, "all", false, "revoke every grant (on --surface, when given) instead of PATTERN")
	fs.StringVar(&sel.Surface, "surface", "", "revoke only grants on this surface (exactly as listed, e.g. path_write)")
	patterns, err := flagargs.Parse(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	switch {
	case len(patterns) > 1:
		return grantsError(stderr, "revoke", fmt.Errorf("one PATTERN at a time, got %d: %q", len(patterns), patterns))
	case len(patterns) == 1 && sel.All:
		return grantsError(stderr, "revoke", fmt.Errorf("PATTERN %q and --all: give one", patterns[0]))
	case len(patterns) == 1 && patterns[0] == "":
		return grantsError(stderr, "revoke", errors.New("PATTERN is empty: give a grant's pattern as broker grants list prints it"))
	case len(patterns) == 0 && !sel.All:
		return grantsError(stderr, "revoke", errors.New("PATTERN or --all is required: a grant's pattern as broker grants list prints it"))
	case len(patterns) == 1:
		sel.Pattern = patterns[0]
	}
	j, err := journal()
	if err != nil {
		return grantsError(stderr, "revoke", err)
	}
	removed, err := j.Revoke(sel)
	if err != nil {
		return grantsError(stderr, "revoke", err)
	}
	if err := grants.WriteRevoked(stdout, j.Path(), removed); err != nil {
		return grantsError(stderr, "revoke", err)
	}
	return 0
}

// grantsError prints err for broker grants cmd and returns its status: 1
// when the journal could not be written, else 2.
func grantsError(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "broker grants %s: %v\n", cmd, err)
	if errors.Is(err, grants.ErrNotSaved) {
		return 1
	}
	return exitUsage
}
