package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/agenthook"
	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

const hookUsage = `usage: child hook claude-code|codex [flags]
       child hook --print-config claude-code|codex [flags]

child hook answers one permission hook event of Claude Code or Codex CLI,
read as JSON on stdin (PermissionRequest; PreToolUse where the operator
wires it): a subagent's call (one with agent_id) is forwarded to the
broker's session as pi's child would forward it, and the decision is
printed on stdout in the exact shape the agent honours. Only the answer
goes to stdout; one line of diagnostics goes to stderr, prefixed "child: ".

The broker's session is --parent, else $COURIER_SESSION, else "courier"
(start the broker with: broker serve --session courier). The requesting
session is the event's agent_id, so "this subagent only" grants last as
long as the subagent; the agent's name is its agent_type.

The main agent's calls (no agent_id) are left to the agent (no output)
unless --main forward. When nobody could answer (no broker, not serving,
--timeout, an event or tool input that cannot be read), nothing is printed
and the exit status is 0, so the agent's own flow decides: its prompt, or
its own deny where nobody can be prompted. --unavailable deny denies
instead, naming why. The hook never allows on an error.

When the broker runs as a user of its own (the isolation mode: broker
serve --ask-group; docs/THREAT-MODEL.md), give that user with
--broker-user or $COURIER_BROKER_USER, so answers, heartbeats and grants
are taken only from it; without either, a mailbox root owned by another
user is refused (a child never takes a root's owner as its broker unless
told to). A user
that does not resolve, or a root it does not own, is a set-up nobody can
answer through: no decision (exit 0), or a deny with --unavailable deny.

--print-config prints the settings to paste (Claude Code: settings.json;
Codex: hooks.json) with this binary's absolute path, the flags given, and
a hook timeout above --timeout. docs/hooks.md has the set-up.

Exit status: 0 (the answer, if any, is on stdout), 2 for a usage error.
`

type hookFlags struct {
	parent, root, logPath, unavailable, main string
	brokerUser                               string
	transport                                string
	nats                                     natsFlags
	printConfig                              bool
	timeout                                  time.Duration
}

func hookFlagSet(f *hookFlags, getenv func(string) string) *flag.FlagSet {
	fs := flag.NewFlagSet("child hook", flag.ContinueOnError)
	fs.StringVar(&f.parent, "parent", "", "the broker's session; default $"+agenthook.EnvSession+", else \""+agenthook.DefaultParent+"\"")
	fs.StringVar(&f.root, "root", "", "mailbox root; default $PI_CODING_AGENT_DIR/sessions/permission-forwarding")
	brokerUserFlag(fs, &f.brokerUser)
	fs.DurationVar(&f.timeout, "timeout", agenthook.DefaultTimeout, "give up (no decision) when no answer arrives within this time")
	fs.StringVar(&f.unavailable, "unavailable", "none", "when nobody could answer: none (print nothing; the agent decides) or deny")
	fs.StringVar(&f.main, "main", "skip", "the main agent's asks (no agent_id): skip (left to the agent) or forward")
	fs.StringVar(&f.logPath, "log", "", "append review-log entries (JSON lines) to this file")
	fs.BoolVar(&f.printConfig, "print-config", false, "print the settings to paste for the agent, and exit")
	transportFlags(fs, &f.transport, &f.nats, getenv)
	return fs
}

// parseHookArgs reads `claude-code|codex` and the flags, in either order.
func parseHookArgs(args []string, getenv func(string) string, stderr io.Writer) (agenthook.CLI, hookFlags, *flag.FlagSet, error) {
	var f hookFlags
	fs := hookFlagSet(&f, getenv)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, hookUsage+transportUsage+"\nFlags of child hook:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return "", f, fs, err
	}
	if fs.NArg() == 0 {
		return "", f, fs, errors.New("which agent? expected claude-code or codex")
	}
	cli, err := agenthook.ParseCLI(fs.Arg(0))
	if err != nil {
		return "", f, fs, err
	}
	if err := fs.Parse(fs.Args()[1:]); err != nil {
		return "", f, fs, err
	}
	if fs.NArg() > 0 {
		return "", f, fs, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if f.timeout <= 0 {
		return "", f, fs, fmt.Errorf("--timeout must be positive, got %s", f.timeout)
	}
	if f.unavailable != "none" && f.unavailable != "deny" {
		return "", f, fs, fmt.Errorf("--unavailable %q: expected none or deny", f.unavailable)
	}
	if f.main != "skip" && f.main != "forward" {
		return "", f, fs, fmt.Errorf("--main %q: expected skip or forward", f.main)
	}
	return cli, f, fs, nil
}

// runHook is child hook: answer one hook event from stdin.
func runHook(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	cli, f, fs, err := parseHookArgs(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return usageError(stderr, "hook: %v (see child hook -h)", err)
	}
	overNATS, err := isNATS(f.transport)
	if err != nil {
		return usageError(stderr, "hook: %v", err)
	}
	if overNATS {
		// This build links no NATS client: its sibling does (decision
		// 0028), and prints its own path with --print-config, so that
		// the agent runs it directly.
		if code, done := execNATS(append([]string{"hook"}, args...), stderr); done {
			return code
		}
	}
	if f.printConfig {
		return printHookConfig(cli, f, fs, stdout, stderr)
	}
	parent := f.parent
	if parent == "" {
		parent = getenv(agenthook.EnvSession)
	}
	if parent == "" {
		parent = agenthook.DefaultParent
	}
	if parent, err = mailbox.NormalizeSessionID(parent); err != nil {
		return usageError(stderr, "hook: the broker's session: %v", err)
	}
	root, err := mailbox.ResolveRoot(f.root)
	if err != nil {
		return usageError(stderr, "hook: %v", err)
	}
	// A broker's user that does not resolve, or a root it does not own,
	// is a set-up nobody can answer through: no decision (below), as for
	// a root that does not exist.
	layout, layoutErr := resolveLayout(root, f.brokerUser, getenv)
	if layoutErr != nil {
		layout = mailbox.Layout{Root: root}
	}
	h := &agenthook.Hook{CLI: cli, Parent: parent, Layout: layout}
	if f.main == "forward" {
		h.Main = agenthook.MainForward
	}
	if f.unavailable == "deny" {
		h.Unavailable = agenthook.UnavailableDeny
	}
	warn := func(err error) { fmt.Fprintf(stderr, "child: hook: warning: %s\n", oneLine(err.Error())) }
	h.Warn = warn
	data, err := io.ReadAll(io.LimitReader(stdin, agenthook.MaxEventSize+1))
	if err != nil {
		warn(fmt.Errorf("reading the event from stdin: %w", err))
	}
	// Over NATS the mailbox only keeps the subagents' own grants, where
	// there is one; its heartbeat says nothing of the broker.
	grantsLayout, keepGrants := h.Layout, true
	if overNATS {
		keepGrants = layoutErr == nil && h.Layout.CheckRoot() == nil
		h.Layout, layoutErr = mailbox.Layout{}, nil
	}
	var res agenthook.Result
	if layoutErr != nil {
		res = h.Unanswered(data, layoutErr.Error())
	} else if cerr := h.Layout.CheckRoot(); cerr != nil && !overNATS {
		// No broker serves a root that does not exist: nobody can answer.
		res = h.Unanswered(data, cerr.Error())
	} else {
		var logFile *reviewlog.Log
		if f.logPath != "" {
			if logFile, err = reviewlog.Open(f.logPath); err != nil {
				warn(err)
			} else {
				defer logFile.Close()
			}
		}
		// A signal cancels the context the whole event is handled under,
		// so that no later ask of the event is written either.
		ctx, arm := interruptibleLater(ctx)
		// One deadline for the event and its asks, over either transport:
		// an ask whose event's time ran out did not get its answer in
		// time; it is not a session that ended (forward.Client.Deadline,
		// natsforward.Client.Deadline).
		deadline := time.Now().Add(f.timeout)
		var fw transportForwarder
		if overNATS {
			if fw, err = newNATSForwarder(f.transport, f.nats, f.timeout, deadline, logFile, warn); err != nil {
				return usageError(stderr, "hook: %v", err)
			}
			h.Forwarder = &interruptOnForward{Forwarder: fw, arm: arm}
		} else {
			fw = &forward.Client{
				Layout: h.Layout, Log: logFile, Timeout: f.timeout, Deadline: deadline, OnWarning: warn,
				// A few asks, then exit, as child ask (see there).
				PollFirst:  forward.OneShotPollFirst,
				OnLongWait: arm,
			}
			h.Forwarder = fw
		}
		defer fw.Close()
		home, _ := os.UserHomeDir()
		h.Home = home
		h.OpenGrants = func(session string) (agenthook.LocalGrants, error) {
			if !keepGrants {
				return nil, nil
			}
			g, err := forward.OpenLocalGrants(grantsLayout, session, home)
			if err != nil {
				return nil, err
			}
			return g, nil
		}
		ctx, cancel := context.WithDeadline(ctx, deadline)
		defer cancel()
		res = h.Handle(ctx, data)
	}
	if _, err := stdout.Write(res.Stdout); err != nil {
		warn(fmt.Errorf("writing the answer: %w", err))
	}
	if res.Diag != "" {
		fmt.Fprintf(stderr, "child: hook: %s\n", oneLine(res.Diag))
	}
	return 0
}

// printHookConfig prints the settings to paste: this binary, by its
// absolute path, with the flags given (the root and log made absolute,
// since the agent runs the hook in the session's directory).
func printHookConfig(cli agenthook.CLI, f hookFlags, fs *flag.FlagSet, stdout, stderr io.Writer) int {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return usageError(stderr, "hook: the path of this binary: %v", err)
	}
	words := []string{self, "hook", string(cli)}
	var flagErr error
	fs.Visit(func(fl *flag.Flag) {
		v := fl.Value.String()
		switch fl.Name {
		case "print-config":
			return
		case "root", "log", "nats-creds", "nats-nkey", "nats-password-file", "nats-ca", "nats-cert", "nats-key":
			abs, err := filepath.Abs(v)
			if err != nil {
				flagErr = err
			}
			v = abs
		}
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			// A bool flag takes no separate value word.
			words = append(words, "--"+fl.Name+"="+v)
			return
		}
		words = append(words, "--"+fl.Name, v)
	})
	if flagErr != nil {
		return usageError(stderr, "hook: %v", flagErr)
	}
	stdout.Write(agenthook.Config(cli, agenthook.ShellJoin(words...), f.timeout))
	return 0
}

// oneLine keeps a diagnostic on one line of stderr.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// interruptOnForward is the hook's Forwarder over NATS: it arms the
// handling of Ctrl-C and SIGTERM (interruptibleLater's arm) just before
// its first request is published. The events that forward nothing (the
// main agent's, a refused event, a session's own grant) never arm it.
type interruptOnForward struct {
	agenthook.Forwarder
	arm func()
}

func (f *interruptOnForward) Forward(ctx context.Context, req wire.Request) decision.Decision {
	f.arm()
	return f.Forwarder.Forward(ctx, req)
}
