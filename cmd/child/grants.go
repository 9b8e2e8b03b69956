package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/seed6639df8c/courier/agenthook"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/internal/flagargs"
	"github.com/seed6639df8c/courier/mailbox"
)

const grantsUsage = `usage: child grants list --session ME [--root DIR] [--json]
       child grants revoke --session ME [--root DIR] (PATTERN | --all) [--surface S]

Shows and takes back the grants of child session ME: what a parent
answered "yes, for this subagent only" (approved_for_session). The child
records them in <root>/courier/grants/child/<session>.json and answers its
own later asks they match without forwarding them. Each child ask reads
the journal when it starts, so a revoke holds from the next ask on.

  list    print each grant: its surface, its pattern (quoted) and the
          journal it is in; --json prints one JSON object
  revoke  remove the grants whose pattern is PATTERN, exactly as list
          prints it (without the quotes), on every surface that has it;
          --surface S removes only the one on surface S; --all removes
          every grant (every grant on S, with --surface)

A pattern that matches no grant is an error that lists the grants there
are. The session is --session, else $PI_SUBAGENT_SESSION_ID; the mailbox
root is --root, else $PI_CODING_AGENT_DIR (default ~/.pi/agent) +
/sessions/permission-forwarding, as for child ask.

When the broker runs as a user of its own (the isolation mode: broker
serve --ask-group; --broker-user USER or $COURIER_BROKER_USER, else a
mailbox root another user owns; docs/THREAT-MODEL.md), the broker records
this session's grants, not the child: list reads the journal it keeps for
this uid, <root>/courier/vouched/<uid>/<session>.json, and takes it only
if the broker's user owns it. revoke there is an error (exit 2): the
child cannot write that journal; the broker's user revokes with
broker grants revoke --vouched-uid UID --session ME ...

Exit status: 0 done; 2 for a usage or configuration error (no such grant;
a journal that is unsafe or malformed, named in the message); 1 if the
journal could not be locked or written (it is left as it was).
`

// runGrants is child grants: list and revoke this session's own grants,
// with the journal editing of package grants.
func runGrants(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, grantsUsage)
		return exitUsage
	}
	cmd := args[0]
	switch cmd {
	case "list", "revoke":
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, grantsUsage)
		return 0
	default:
		fmt.Fprintf(stderr, "child grants: unknown command %q, expected list or revoke\n\n%s", cmd, grantsUsage)
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "child grants %s: %v\n", cmd, err)
		if errors.Is(err, grants.ErrNotSaved) {
			return 1
		}
		return exitUsage
	}
	fs := flag.NewFlagSet("child grants "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, grantsUsage+"\nFlags of child grants "+cmd+":\n"); fs.PrintDefaults() }
	session := fs.String("session", getenv("PI_SUBAGENT_SESSION_ID"), "this (child) session's id; default $PI_SUBAGENT_SESSION_ID")
	root := fs.String("root", "", "mailbox root; default $PI_CODING_AGENT_DIR/sessions/permission-forwarding")
	var brokerUser string
	brokerUserFlag(fs, &brokerUser)
	asJSON := false
	var sel grants.Selector
	if cmd == "list" {
		fs.BoolVar(&asJSON, "json", false, "print the grants as one JSON object")
	} else {
		fs.BoolVar(&sel.All, "all", false, "revoke every grant (on --surface, when given) instead of PATTERN")
		fs.StringVar(&sel.Surface, "surface", "", "revoke only grants on this surface (exactly as listed, e.g. path_write)")
	}
	positional, err := flagargs.Parse(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	switch {
	case cmd == "list" && len(positional) > 0:
		return fail(fmt.Errorf("unexpected argument %q", positional[0]))
	case cmd == "list":
	case len(positional) > 1:
		return fail(fmt.Errorf("one PATTERN at a time, got %d: %q", len(positional), positional))
	case len(positional) == 1 && sel.All:
		return fail(fmt.Errorf("PATTERN %q and --all: give one", positional[0]))
	case len(positional) == 1 && positional[0] == "":
		return fail(errors.New("PATTERN is empty: give a grant's pattern as child grants list prints it"))
	case len(positional) == 0 && !sel.All:
		return fail(errors.New("PATTERN or --all is required: a grant's pattern as child grants list prints it"))
	case len(positional) == 1:
		sel.Pattern = positional[0]
	}
	if *session == "" {
		return fail(errors.New("--session (or $PI_SUBAGENT_SESSION_ID) is required: the child session whose grants these are"))
	}
	rootDir, err := mailbox.ResolveRoot(*root)
	if err != nil {
		return fail(err)
	}
	layout, err := resolveLayout(rootDir, brokerUser, getenv)
	if err != nil {
		return fail(err)
	}
	journal, err := grants.OpenChild(layout, *session)
	if err != nil {
		return fail(err)
	}
	if layout.Isolated() && cmd == "revoke" {
		return fail(isolatedRevoke(layout, journal.Path(), *session, positional, sel))
	}
	if cmd == "revoke" {
		removed, err := journal.Revoke(sel)
		if err == nil {
			err = grants.WriteRevoked(stdout, journal.Path(), removed)
		}
		if err != nil {
			return fail(err)
		}
		return 0
	}
	l, err := journal.List()
	if err == nil {
		write := l.WriteTable
		if asJSON {
			write = l.WriteJSON
		}
		err = write(stdout)
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

// isolatedRevoke is the error of child grants revoke in the isolation
// mode: the broker's user keeps the session's grants (in journal), and
// only it can take one back. It says how, with this revoke's selection.
func isolatedRevoke(layout mailbox.Layout, journal, session string, positional []string, sel grants.Selector) error {
	euid := os.Geteuid()
	words := []string{"broker", "grants", "revoke", "--root", layout.Root, "--vouched-uid", fmt.Sprint(euid), "--session", session}
	if sel.Surface != "" {
		words = append(words, "--surface", sel.Surface)
	}
	if sel.All {
		words = append(words, "--all")
	} else if len(positional) == 1 {
		words = append(words, positional[0])
	}
	return fmt.Errorf("the broker runs as its own user (uid %d) and keeps this session's grants in %s, which this child (uid %d) cannot write; revoke them as the broker's user: %s",
		layout.Isolation.BrokerUID, journal, euid, agenthook.ShellJoin(words...))
}
