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

	"github.com/seed6639df8c/courier/chain"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/plugins"
	"github.com/seed6639df8c/courier/plugins/confine"
	"github.com/seed6639df8c/courier/prompt"
	"github.com/seed6639df8c/courier/relay"
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

Terminals (without --terminal: tty when standard input is a terminal
and the broker runs in its foreground, else deny; the startup line says
which):
  deny    nobody is at this broker: asks that reach the terminal are
          "unavailable", never a user's denial
  tty     a human at this terminal: one prompt at a time, a count of those
          waiting; y once, s for this session (then: this subagent only or
          the whole session), n no, r no with a reason
  relay   this broker's session is itself a subagent's: forward to its own
          parent (--parent) and relay the answer down; runs no plugin links
          (the review log names the configured ones it did not run, per
          ask: authorizer_chain_delegated)

A pi 20.x child's request carries no access facts: the rules are not
consulted for it (unless legacyBashDisplayMatch matches a bash request by
its display value) and it goes to the chain and the terminal. The first
such request of a run is said on stderr ("broker: notice: ...") and in
the review log, naming the agent; broker check --request FILE shows how
one request file is resolved.

The whole-session grants journaled for ID are loaded at start, and each
is printed with where it came from (the request, what was asked, when,
who answered). A journal the broker did not write (another mode than
0600, another owner, the old format, a grant without those facts) is
refused: the broker serves without its grants, says so on stderr and in
the review log, and leaves the file as it is until it is removed.

The review log is rotated at reviewLogMaxBytes (default 64 MiB) to
<log>.1, which broker audit reads too.

The plugin host's diagnostic log (plugin starts, restarts and failures,
go-plugin's messages, what plugins print on stderr) goes to the review log
as authorizer_plugin.log entries, Info and above, within a budget per link
(a burst of 200 lines, then one every 10 s); with --log - it is dropped.
--verbose prints it on stderr instead, go-plugin's debug lines included.
Problems the operator must act on (a link disabled or not started, a
missing confinement) are printed on stderr either way.

One broker serves a session: a second broker serve of the same session
and root refuses to start, naming the pid that serves it and since when.
The hold is a lock the kernel drops when the broker dies, so a broker
killed with SIGKILL never keeps its successor out.

The root (--root) is created when missing only inside an existing
directory; pi's own root under $PI_CODING_AGENT_DIR is created as pi
creates it.

Exit status: 0 after a clean stop, 2 for a usage or configuration error
(the message names the file, line:column and what was expected; a config
file others could write is refused with its path and mode; a --root that
cannot be created is named), 1 if serving failed or another broker
serves the session.
`

func runServe(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("broker serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, serveUsage, isolationUsage, intentUsage, natsUsage, "\nFlags:\n")
		printVisibleDefaults(fs)
	}
	session := fs.String("session", "", "the serving session id (required)")
	root := fs.String("root", "", "mailbox root; default $PI_CODING_AGENT_DIR/sessions/permission-forwarding")
	configPath := fs.String("config", "", "rules config (pi's permission format); default the embedded defaults")
	terminal := fs.String("terminal", "", "who answers what nothing else decided: deny, tty or relay; default tty with a terminal on stdin, else deny")
	parent := fs.String("parent", "", "with --terminal relay: the session to relay to; default $PI_AGENT_ROUTER_PARENT_SESSION_ID, then $PI_SUBAGENT_PARENT_SESSION")
	logPath := fs.String("log", "", "review log (JSON lines); default $PI_CODING_AGENT_DIR/courier/review.jsonl; - for none")
	watch := mailbox.WatchFSNotify
	fs.TextVar(&watch, "watch", mailbox.WatchFSNotify, "how to notice requests: fsnotify, or poll for filesystems without inotify")
	pollInterval := fs.Duration("poll-interval", mailbox.DefaultPollInterval, "the scan interval with --watch=poll")
	maxPendingPer := fs.Int("max-pending-per-requester", serve.DefaultMaxPendingPerRequester, "asks of one requesting session that may wait for the chain or the terminal; past it an ask is answered unavailable at once (0: no bound)")
	maxPending := fs.Int("max-pending", serve.DefaultMaxPending, "asks of all sessions that may wait for the chain or the terminal (0: no bound)")
	verbose := fs.Bool("verbose", false, "print the plugin host's diagnostic log (plugin starts and failures, go-plugin's debug lines, what plugins print) on stderr; without it, its Info and above go to the review log as "+plugins.LogEvent+" entries")
	askGroup := fs.String("ask-group", "", "the isolation mode: the broker runs as its own user, and members of this group (a name or a numeric gid) ask as theirs; see the isolation mode above and docs/THREAT-MODEL.md")
	intentOpts := addIntentFlags(fs)
	natsOpts := addNATSFlags(fs)
	notifyCmd := fs.String("notify-cmd", "", "with --terminal tty: a command run when asks arrive (at most once a second), the ask in its environment (COURIER_ASK_SUMMARY, …); split into words without a shell")
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
	if err := natsOpts.check(*terminal); err != nil {
		return serveError(stderr, "%v", err)
	}
	transcript, err := intentOpts.open()
	if err != nil {
		return serveError(stderr, "%v", err)
	}

	rootDir, err := mailbox.ResolveRoot(*root)
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	layout := mailbox.Layout{Root: rootDir}
	mode := ""
	if *askGroup != "" {
		iso, group, err := isolation(*askGroup)
		if err != nil {
			return serveError(stderr, "%v", err)
		}
		layout.Isolation = iso
		mode = fmt.Sprintf("isolation: broker uid %d, ask group %s (gid %d)", iso.BrokerUID, group, iso.GID)
	}
	if err := checkTree(layout); err != nil {
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
	// The self-approval guard's trees: the mailbox, pi's whole agent
	// directory (its settings.json included), and the broker's own files,
	// wherever they are: its config, its grants journals, its review log
	// (and the log's rotated <log>.1).
	protected := []string{rootDir, filepath.Join(layout.StateDir(), "grants")}
	if dir, err := mailbox.AgentDir(); err == nil {
		protected = append(protected, dir, filepath.Join(dir, "settings.json"))
	}
	if home != "" {
		protected = append(protected, filepath.Join(home, ".pi", "agent"))
	}
	for _, own := range []string{*configPath, *logPath} {
		if own == "" || own == "-" {
			continue
		}
		if abs, err := filepath.Abs(own); err == nil {
			protected = append(protected, abs)
			if own == *logPath {
				protected = append(protected, abs+".1")
			}
		}
	}
	// The authorizer plugins' binaries too: overwriting one breaks its
	// pinned SHA-256 and disables the link (a deny-list plugin that defers
	// on failure stops denying). NewPolicy adds each resolved spelling.
	for _, link := range cfg.AuthorizerChain {
		if link.Path != "" {
			protected = append(protected, link.Path)
		}
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Home: home, Protected: protected})
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	if err := layout.PrepareRoot(); err != nil {
		return serveError(stderr, "%v", err)
	}
	if layout.Isolated() {
		if err := layout.PrepareIsolated(); err != nil {
			return serveError(stderr, "preparing the mailbox for the isolation mode: %v", err)
		}
		warnUnreachableRoot(rootDir, layout.Isolation.GID, stderr)
	}
	lock, err := layout.LockServing(ctx, *session)
	if err != nil {
		fmt.Fprintf(stderr, "broker serve: %v\n", err)
		return 1
	}
	defer releaseLock(lock, stderr)
	review, logName, err := openReviewLog(*logPath, cfg.ReviewLogFieldMaxWidth, cfg.ReviewLogMaxBytes)
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	defer review.Close()
	journal, err := grants.Open(layout, grants.Broker, *session)
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	loadJournal(journal, policy.Sessions(), review, stderr)

	watchOpts := mailbox.WatchOptions{Mode: watch, PollInterval: *pollInterval}
	kind, chosen := *terminal, ""
	if kind == "" {
		kind, chosen = defaultTerminal(os.Stdin)
	}
	term, err := newTerminal(terminalSpec{
		kind: kind, layout: layout, session: *session, log: review, stderr: stderr,
		parent: *parent, forwardingTimeout: cfg.ForwardingTimeout, watch: watchOpts,
		notifyCmd: *notifyCmd, promptTimeout: cfg.PromptTimeout, ctx: ctx, nats: natsOpts,
	})
	if err != nil && chosen != "" && errors.Is(err, prompt.ErrNoTerminal) {
		// Chosen for the operator, not by them: no prompt after all.
		kind, chosen = "deny", fmt.Sprintf("default: %v", err)
		term, err = newTerminal(terminalSpec{kind: kind})
	}
	if err != nil {
		return serveError(stderr, "%v", err)
	}
	defer term.close()
	if chosen != "" {
		kind += " (" + chosen + ")"
	}

	// One chain per node: a relaying broker's node does not adjudicate.
	// Its links are never started; in the chain's place, Delegation logs
	// each ask it relays with the links it did not run.
	var (
		links  *chain.Chain
		judges serve.Chain
	)
	if *terminal == "relay" {
		names := make([]string, len(cfg.AuthorizerChain))
		for i, l := range cfg.AuthorizerChain {
			names[i] = l.Name
		}
		if len(names) > 0 {
			fmt.Fprintf(stderr, "broker: warning: --terminal relay runs no authorizer links; the %d configured are not consulted (the node that adjudicates runs its own)\n", len(names))
		}
		if transcript != nil {
			fmt.Fprintln(stderr, "broker: warning: --terminal relay runs no authorizer links: --intent is not read")
		}
		judges = &relay.Delegation{Links: names, Log: review, OnError: func(err error) { fmt.Fprintf(stderr, "broker: %v\n", err) }}
	} else {
		diag := pluginLogger(*verbose, review, stderr)
		var (
			problems []error
			plan     *confine.Plan
		)
		if len(cfg.AuthorizerChain) > 0 {
			plan = confine.Probe(ctx)
			for _, m := range plan.Missing {
				fmt.Fprintf(stderr, "broker: warning: plugins run without %s\n", m)
			}
		}
		conversation := intentOpts.provider(ctx, transcript, cfg.AuthorizerChain, stderr)
		links, problems = plugins.Load(ctx, cfg.AuthorizerChain, review, plugins.Options{Logger: &diag, Confinement: plan, Conversation: conversation})
		for _, p := range problems {
			fmt.Fprintf(stderr, "broker: authorizer chain: %v\n", p)
		}
		defer links.Close()
		if links.Len() > 0 {
			// No chain at all, rather than an empty one: serve then hands
			// an ask to a prompt in the worker that read it, with no
			// goroutine of its own (serve.Broker.Chain).
			judges = links
		}
	}
	b := &serve.Broker{
		Layout: layout, Session: *session, Policy: policy, Terminal: term.Terminal,
		Log: review, Journal: journal, Chain: judges,
		Watch:             watchOpts,
		ForwardingTimeout: cfg.ForwardingTimeout, PromptTimeout: cfg.PromptTimeout,
		MaxPendingPerRequester: bound(*maxPendingPer), MaxPending: bound(*maxPending),
		LegacyBashDisplayMatch: cfg.LegacyBashDisplayMatch,
		OnError:                func(err error) { fmt.Fprintf(stderr, "broker: %v\n", err) },
		OnNotice:               func(msg string) { fmt.Fprintf(stderr, "broker: notice: %s\n", msg) },
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
	if mode != "" {
		fmt.Fprintf(stderr, "broker: %s\n", mode)
	}
	serveCtx, stopNATS := ctx, func() error { return nil }
	if natsOpts.enabled() {
		ns, err := startNATS(ctx, natsOpts, layout, *session, review, ctx.Done(), stderr)
		if err != nil {
			fmt.Fprintf(stderr, "broker serve: %v\n", err)
			return natsExit(err)
		}
		var stopServe context.CancelFunc
		serveCtx, stopServe = context.WithCancel(ctx)
		defer stopServe()
		// A bridge that ends by itself (it lost the session's lease to
		// another broker) ends serving too.
		go func() {
			select {
			case <-ns.ended:
				stopServe()
			case <-serveCtx.Done():
			}
		}()
		stopNATS = ns.stop
		// One write with the line after it, which says what a child on
		// this host passes: whoever reads the first reads both.
		fmt.Fprintf(stderr, "broker: serving session %q over NATS at %s\n%s", *session, ns.where, ns.childLine)
	}
	fmt.Fprintf(stderr, "broker: serving session %q at %s (rules: %s; %d session grants; %d authorizer links; terminal: %s; log: %s)\n",
		*session, rootDir, source, policy.Sessions().Len(), links.Len(), kind, logName)
	runErr := b.Run(serveCtx)
	if err := stopNATS(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "broker: %v\n", runErr)
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
// plant answers), by the layout's mode (in the isolation mode only the
// sticky request drops of the ask group are group-writable); a root that
// does not exist yet is fine.
func checkTree(layout mailbox.Layout) error {
	if _, err := os.Lstat(layout.Root); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return layout.CheckTree()
}

// openReviewLog opens the review log: path, or the default under the agent
// directory; "-" logs nothing. It is rotated at maxBytes.
func openReviewLog(path string, width int, maxBytes int64) (*reviewlog.Log, string, error) {
	if path == "-" {
		return nil, "none", nil
	}
	if path == "" {
		var err error
		if path, err = defaultReviewLogPath(); err != nil {
			return nil, "", err
		}
	}
	log, err := reviewlog.Open(path, reviewlog.WithFieldWidth(width), reviewlog.WithMaxBytes(maxBytes))
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

// bound is a --max-pending flag as serve.Broker takes it: 0 or less is no
// bound (serve reads 0 as its default).
func bound(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
