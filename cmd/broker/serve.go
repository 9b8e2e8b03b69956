package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/rs/zerolog"

	"github.com/seed6639df8c/courier/chain"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/plugins"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
)

const serveUsage = `usage: broker serve --session ID [flags]

Serves the permission-forwarding inbox of session ID: every ask a subagent
forwards is resolved against the rules and session grants (only asks that
carry the child's access facts), then the authorizer chain, then the
terminal, and answered with who decided.

Until SIGINT, SIGTERM or SIGHUP: then every pending ask is answered "unavailable"
(the session ended), the heartbeat is withdrawn, and the broker exits 0.

Terminals:
  deny    nobody is at this broker: asks that reach the terminal are
          "unavailable", never a user's denial (the default)
  tty     a human at this terminal: one prompt at a time, a count of those
          waiting; y once, s for this session (then: this subagent only or
          the whole session), n no, r no with a reason
  relay   this broker's session is itself a subagent's: forward to its own
          parent (--parent) and relay the answer down; runs no plugin links

Exit status: 0 after a clean stop, 2 for a usage or configuration error
(the message names the file, line:column and what was expected), 1 if
serving failed.

Flags:
`

func runServe(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("broker serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, serveUsage); printVisibleDefaults(fs) }
	session := fs.String("session", "", "the serving session id (required)")
	root := fs.String("root", "", "mailbox root; default $PI_CODING_AGENT_DIR/sessions/permission-forwarding")
	configPath := fs.String("config", "", "rules config (pi's permission format); default the embedded defaults")
	terminal := fs.String("terminal", "deny", "who answers what nothing else decided: deny, tty or relay")
	parent := fs.String("parent", "", "with --terminal relay: the session to relay to; default $PI_AGENT_ROUTER_PARENT_SESSION_ID, then $PI_SUBAGENT_PARENT_SESSION")
	logPath := fs.String("log", "", "review log (JSON lines); default $PI_CODING_AGENT_DIR/courier/review.jsonl; - for none")
	watch := mailbox.WatchFSNotify
	fs.TextVar(&watch, "watch", mailbox.WatchFSNotify, "how to notice requests: fsnotify, or poll for filesystems without inotify")
	pollInterval := fs.Duration("poll-interval", mailbox.DefaultPollInterval, "the scan interval with --watch=poll")
	// Hidden: for courier-bench and anyone profiling the serve loop; not
	// an operator's flag, so the usage does not list it.
	cpuProfile := fs.String(cpuProfileFlag, "", "write a CPU profile of the whole serve to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		return serveError(stderr, "unexpected argument %q", fs.Arg(0))
	}
	if *session == "" {
		return serveError(stderr, "--session ID is required")
	}

	rootDir, err := mailbox.ResolveRoot(*root)
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	layout := mailbox.Layout{Root: rootDir}
	if err := checkTree(rootDir); err != nil {
		return serveError(stderr, "refusing to serve: %v", err)
	}
	cfg, err := rules.Load(*configPath)
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "broker: warning: %s\n", w)
	}
	home, _ := os.UserHomeDir()
	protected := []string{rootDir}
	if *configPath != "" {
		if abs, err := filepath.Abs(*configPath); err == nil {
			protected = append(protected, abs)
		}
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Home: home, Protected: protected})
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	journal, err := grants.Open(layout, grants.Broker, *session)
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	if err := journal.Load(policy.Sessions()); err != nil {
		return serveError(stderr, "%v (remove the file to start this session without its grants)", err)
	}

	review, logName, err := openReviewLog(*logPath, cfg.ReviewLogFieldMaxWidth)
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	defer review.Close()

	watchOpts := mailbox.WatchOptions{Mode: watch, PollInterval: *pollInterval}
	term, err := newTerminal(terminalSpec{
		kind: *terminal, layout: layout, session: *session, log: review, stderr: stderr,
		parent: *parent, forwardingTimeout: cfg.ForwardingTimeout, watch: watchOpts,
	})
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	defer term.close()

	// One chain per node: a relaying broker's node does not adjudicate.
	var links *chain.Chain
	if *terminal == "relay" {
		if n := len(cfg.AuthorizerChain); n > 0 {
			fmt.Fprintf(stderr, "broker: warning: --terminal relay runs no authorizer links; the %d configured are not consulted (the node that adjudicates runs its own)\n", n)
		}
	} else {
		diag := zerolog.New(zerolog.SyncWriter(zerolog.ConsoleWriter{Out: stderr, NoColor: true, TimeFormat: "15:04:05"})).With().Timestamp().Str("component", "plugins").Logger()
		var problems []error
		links, problems = plugins.Load(ctx, cfg.AuthorizerChain, review, plugins.Options{Logger: &diag})
		for _, p := range problems {
			fmt.Fprintf(stderr, "broker: authorizer chain: %v\n", p)
		}
		defer links.Close()
	}
	b := &serve.Broker{
		Layout: layout, Session: *session, Policy: policy, Terminal: term.Terminal,
		Log: review, Journal: journal, Chain: links,
		Watch:             watchOpts,
		ForwardingTimeout: cfg.ForwardingTimeout, PromptTimeout: cfg.PromptTimeout,
		LegacyBashDisplayMatch: cfg.LegacyBashDisplayMatch,
		OnError:                func(err error) { fmt.Fprintf(stderr, "broker: %v\n", err) },
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return serveError(stderr, "%v", err)
		}
		defer func() {
			if err := stopProfile(); err != nil {
				fmt.Fprintf(stderr, "broker: %v\n", err)
			}
		}()
	}
	source := cfg.Source
	fmt.Fprintf(stderr, "broker: serving session %q at %s (rules: %s; %d session grants; %d authorizer links; terminal: %s; log: %s)\n",
		*session, rootDir, source, policy.Sessions().Len(), links.Len(), *terminal, logName)
	if err := b.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "broker: %v\n", err)
		return 1
	}
	fmt.Fprintln(stderr, "broker: stopped")
	return 0
}

func serveError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "broker serve: "+format+"\n", args...)
	return exitUsage
}

// checkTree refuses a mailbox tree that others could write to (they could
// plant answers); a root that does not exist yet is fine.
func checkTree(root string) error {
	if _, err := os.Lstat(root); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return mailbox.CheckTree(root)
}

// openReviewLog opens the review log: path, or the default under the agent
// directory; "-" logs nothing.
func openReviewLog(path string, width int) (*reviewlog.Log, string, error) {
	if path == "-" {
		return nil, "none", nil
	}
	if path == "" {
		dir, err := mailbox.AgentDir()
		if err != nil {
			return nil, "", err
		}
		path = filepath.Join(dir, "courier", "review.jsonl")
	}
	log, err := reviewlog.Open(path, reviewlog.WithFieldWidth(width))
	if err != nil {
		return nil, "", err
	}
	return log, path, nil
}

// cpuProfileFlag names the hidden --cpuprofile flag of broker serve.
const cpuProfileFlag = "cpuprofile"

// printVisibleDefaults is fs.PrintDefaults without the hidden flags.
func printVisibleDefaults(fs *flag.FlagSet) {
	visible := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	visible.SetOutput(fs.Output())
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != cpuProfileFlag {
			visible.Var(f.Value, f.Name, f.Usage)
			// Var takes the current value as the default; the usage
			// must show the real default even after parsing.
			visible.Lookup(f.Name).DefValue = f.DefValue
		}
	})
	visible.PrintDefaults()
}

// startCPUProfile profiles the process into path until the returned stop
// is called (runServe defers it, so the profile covers the orderly stop
// too and is complete when the broker exits 0).
func startCPUProfile(path string) (stop func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		return nil
	}, nil
}
