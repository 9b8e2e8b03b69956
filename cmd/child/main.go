// Command child is the subagent side of courier: it forwards one
// permission ask to the parent session's broker and prints the decision.
//
// Output rules: the decision goes to stdout as one JSON object; a one-line
// summary and any diagnostics go to stderr prefixed "child: ".
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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/internal/strictjson"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// Exit statuses.
const (
	exitAllowed     = 0
	exitDenied      = 1
	exitUsage       = 2
	exitUnavailable = 3
)

const usage = `usage: child ask [flags]
       child grants (list | revoke) --session ME [flags]   (see child grants -h)
       child hook claude-code|codex [flags]               (see child hook -h)

Commands:
  ask     forward one permission ask to the parent session's broker and
          print the decision
  grants  list or revoke this session's own grants (the answers "yes, for
          this subagent only")
  hook    answer a Claude Code or Codex permission hook event on stdin by
          forwarding a subagent's call to the broker (docs/hooks.md)

child ask forwards one permission ask to the parent session's broker
through the mailbox, waits for the answer, and prints the decision as one
JSON object on stdout (a one-line summary goes to stderr).

The ask comes from flags:

  child ask --parent P --session S --agent A --surface bash --value 'git push'

or, when neither --surface nor --value is given, as a JSON request on
stdin in pi's wire shape (any ForwardedPermissionRequest field; id,
createdAt, requesterSessionId, targetSessionId and requesterAgentName are
filled from the flags and environment when missing):

  echo '{"surface":"bash","value":"ls","accessIntent":{...}}' | child ask --session S

The parent session is --parent, else $PI_AGENT_ROUTER_PARENT_SESSION_ID,
else $PI_SUBAGENT_PARENT_SESSION (a parent equal to --session is skipped).
The mailbox root is --root, else $PI_CODING_AGENT_DIR (default ~/.pi/agent)
+ /sessions/permission-forwarding. pi's own root is created as a pi child
creates it; a --root that does not exist is an error naming it (no broker
serves there), never created.

The child waits for the answer while the parent's heartbeat says it is
serving; a parent that is not serving for 2 s, or no answer within
--timeout, gives up with "unavailable" (never a user denial) and removes
the request. --no-heartbeat waits up to --timeout for a parent that writes
no heartbeat (pi 20.x). An unavailable answer from a parent that is not
serving is followed on stderr by where the child looked: the mailbox root
and the heartbeat file.

When the broker runs as a user of its own (the isolation mode: broker
serve --ask-group; docs/THREAT-MODEL.md), give that user with
--broker-user or $COURIER_BROKER_USER: the child then takes answers,
heartbeats and its grants only from that user, and refuses a mailbox root
another user owns (exit 2, naming the root, its owner and the user
expected). Without either, a root owned by another user is refused the
same way: a child never takes a root's owner as its broker unless told
to. In that mode only the broker
creates a session's inbox: a missing one is "not serving".

Exit status: 0 allowed, 1 denied, 3 unavailable (nobody could answer),
2 usage or configuration error.
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
}

// interruptible returns ctx cancelled by Ctrl-C or SIGTERM from now on,
// so that an interrupted wait abandons (removes) its request rather than
// leave it for the broker to prompt for. The handling is never stopped:
// the process ends after the ask either way, and stopping waits for a
// hand-off with the runtime's signal goroutine (0.15 ms p50).
func interruptible(ctx context.Context) context.Context {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	_ = stop
	return ctx
}

// interruptibleLater returns ctx, cancelled (the signal's context's cause
// as its cause) by Ctrl-C or SIGTERM once arm has run, and arm, which
// arms that handling the first time it is called. The file transport
// calls arm when its ask's answer is not a quick one
// (forward.Client.OnLongWait): arming costs a goroutine of the runtime's
// on a thread of its own, 0.3-0.5 ms of a one-ask process's wall time
// measured, as much as a rule's whole round trip, and an ask a rule or a
// grant answers is over in less; an interrupt in those first
// milliseconds ends the process by the signal, and the broker withdraws
// the request of a requester that is gone (decision 0030).
func interruptibleLater(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			sig := interruptible(context.Background())
			context.AfterFunc(sig, func() { cancel(context.Cause(sig)) })
		})
	}
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type askFlags struct {
	parent, session, agent, surface, value, tool string
	root, cwd, boundary, floor, logPath          string
	brokerUser                                   string
	transport                                    string
	nats                                         natsFlags
	timeout, pollInterval                        time.Duration
	noHeartbeat                                  bool
	watch                                        mailbox.WatchMode
	match, grants                                listFlag
}

func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "ask":
		return runAsk(ctx, args[1:], getenv, stdin, stdout, stderr)
	case "grants":
		return runGrants(args[1:], getenv, stdout, stderr)
	case "hook":
		return runHook(ctx, args[1:], getenv, stdin, stdout, stderr)
	case "-h", "-help", "--help", "help":
		printUsage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "child: unknown command %q: the commands are ask, hook and grants\n\n", args[0])
	printUsage(stderr)
	return exitUsage
}

// printUsage writes the usage and the flags of child ask, with their
// defaults as documented rather than as this environment sets them.
func printUsage(w io.Writer) {
	fmt.Fprint(w, usage)
	fmt.Fprint(w, transportUsage)
	fmt.Fprint(w, "\nFlags of child ask:\n")
	fs := askFlagSet(new(askFlags), func(string) string { return "" })
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// askFlagSet declares the flags of child ask into f.
func askFlagSet(f *askFlags, getenv func(string) string) *flag.FlagSet {
	fs := flag.NewFlagSet("child ask", flag.ContinueOnError)
	fs.StringVar(&f.parent, "parent", "", "parent (serving) session id")
	fs.StringVar(&f.session, "session", getenv("PI_SUBAGENT_SESSION_ID"), "this (asking) session's id; default $PI_SUBAGENT_SESSION_ID")
	fs.StringVar(&f.agent, "agent", "", "asking agent's name; default $PI_SUBAGENT_NAME, else \"unknown\"")
	fs.StringVar(&f.surface, "surface", "", "gate surface: bash, path_read, path_write, external_directory_read, a tool name...")
	fs.StringVar(&f.value, "value", "", "what is asked for: the command, the path, the tool input")
	fs.StringVar(&f.tool, "tool", "", "display surface (the tool's name, e.g. write); default --surface")
	fs.Var(&f.match, "match", "an extra match value (repeatable)")
	fs.StringVar(&f.boundary, "boundary", "", "boundary value (the canonical path on path surfaces); derived by default")
	fs.StringVar(&f.floor, "floor", "", "synthetic floor sentinel, e.g. <opaque-bash-wrapper>: a rule allow still asks")
	fs.Var(&f.grants, "grant", "suggested session grant surface:pattern (repeatable); default derived from the ask")
	fs.StringVar(&f.root, "root", "", "mailbox root; default $PI_CODING_AGENT_DIR/sessions/permission-forwarding")
	brokerUserFlag(fs, &f.brokerUser)
	fs.StringVar(&f.cwd, "cwd", "", "requester working directory; default the current directory")
	fs.DurationVar(&f.timeout, "timeout", forward.DefaultTimeout, "give up when no answer arrives within this time")
	fs.BoolVar(&f.noHeartbeat, "no-heartbeat", false, "do not give up on a parent without a heartbeat (pi 20.x parents write none)")
	fs.StringVar(&f.logPath, "log", "", "append review-log entries (JSON lines) to this file")
	fs.TextVar(&f.watch, "watch", mailbox.WatchFSNotify, "how to wait for the answer: fsnotify or poll")
	fs.DurationVar(&f.pollInterval, "poll-interval", mailbox.DefaultPollInterval, "poll interval with --watch=poll")
	transportFlags(fs, &f.transport, &f.nats, getenv)
	return fs
}

// runAsk is child ask: forward one ask and print the decision.
func runAsk(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f askFlags
	fs := askFlagSet(&f, getenv)
	fs.SetOutput(stderr)
	fs.Usage = func() { printUsage(stderr) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "unexpected argument %q", fs.Arg(0))
	}
	if f.timeout <= 0 {
		return usageError(stderr, "--timeout must be positive, got %s", f.timeout)
	}
	overNATS, err := isNATS(f.transport)
	if err != nil {
		return usageError(stderr, "%v", err)
	}
	if overNATS {
		// This build links no NATS client: its sibling does (decision 0028).
		if code, done := execNATS(append([]string{"ask"}, args...), stderr); done {
			return code
		}
	}
	if f.agent == "" {
		f.agent = getenv("PI_SUBAGENT_NAME")
	}
	if f.agent == "" {
		f.agent = "unknown"
	}
	if f.cwd == "" {
		f.cwd, _ = os.Getwd()
	}
	layout, err := askLayout(f.root, f.brokerUser, getenv)
	if err != nil && !overNATS {
		return usageError(stderr, "%v", err)
	}
	// Over NATS the mailbox only keeps this session's own grants, where
	// there is one: no mailbox is no grants, not an error.
	haveMailbox := err == nil

	var logFile *reviewlog.Log
	if f.logPath != "" {
		if logFile, err = reviewlog.Open(f.logPath); err != nil {
			return usageError(stderr, "%v", err)
		}
		defer logFile.Close()
	}
	client := &forward.Client{
		Layout:      layout,
		Log:         logFile,
		Watch:       mailbox.WatchOptions{Mode: f.watch, PollInterval: f.pollInterval},
		Timeout:     f.timeout,
		NoHeartbeat: f.noHeartbeat,
		OnWarning:   func(err error) { fmt.Fprintf(stderr, "child: warning: %v\n", err) },
		// One ask, then exit: look for a rule's quick answer before
		// arming an inotify watch, whose teardown the exit would wait for.
		PollFirst: forward.OneShotPollFirst,
	}

	req, target, err := buildRequest(f, getenv, stdin)
	if err != nil {
		return usageError(stderr, "%v", err)
	}
	// This session's own grants ("yes, for this subagent only") answer
	// first; they are an optimisation, so trouble reading them only warns.
	var local *forward.LocalGrants
	if haveMailbox {
		home, _ := os.UserHomeDir()
		if local, err = forward.OpenLocalGrants(client.Layout, req.RequesterSessionID, home); err != nil {
			fmt.Fprintf(stderr, "child: warning: this session's grants are not used: %v\n", err)
		}
	}
	if d, ok := local.Resolve(req); ok {
		client.LogLocal(req, d)
		return report(stdout, stderr, req.ID, d)
	}
	var d decision.Decision
	switch {
	case target == "":
		d = client.Unresolved(req.ID)
	case overNATS:
		req.TargetSessionID = target
		fw, err := newNATSForwarder(f.transport, f.nats, f.timeout, time.Now().Add(f.timeout), logFile, client.OnWarning)
		if err != nil {
			return usageError(stderr, "%v", err)
		}
		defer fw.Close()
		d = fw.Forward(interruptible(ctx), req)
	default:
		req.TargetSessionID = target
		ctx, arm := interruptibleLater(ctx)
		client.OnLongWait = arm
		d = client.Forward(ctx, req)
	}
	if err := local.Record(req, d); err != nil {
		fmt.Fprintf(stderr, "child: warning: %v\n", err)
	}
	code := report(stdout, stderr, req.ID, d)
	switch {
	case d.Unavailable() && target != "" && overNATS:
		fmt.Fprintf(stderr, "child: asked session %q through the NATS engine at %s\n", target, redactURL(f.transport))
	case d.Unavailable() && target != "":
		whereLooked(stderr, layout, target)
	}
	return code
}

// askLayout is the mailbox child ask uses: root (else the default root)
// as resolveLayout reads it, checked to exist.
func askLayout(root, brokerUser string, getenv func(string) string) (mailbox.Layout, error) {
	root, err := mailbox.ResolveRoot(root)
	if err != nil {
		return mailbox.Layout{}, err
	}
	layout, err := resolveLayout(root, brokerUser, getenv)
	if err != nil {
		return mailbox.Layout{}, err
	}
	if err := layout.CheckRoot(); err != nil {
		return mailbox.Layout{}, err
	}
	return layout, nil
}

// whereLooked follows an unavailable answer from a parent that is not
// serving with where the child looked for it: pi's sentence, which the
// decision carries unchanged, names only the session.
func whereLooked(stderr io.Writer, layout mailbox.Layout, target string) {
	s, err := layout.CheckServing(target, time.Now())
	if err != nil || s.State == mailbox.ServingAlive {
		return
	}
	path, _ := layout.HeartbeatPath(target)
	fmt.Fprintf(stderr, "child: looked for session %q in the mailbox at %s: its heartbeat %s is %s\n", target, layout.Root, path, heartbeatState(s.State))
}

// heartbeatState reads a heartbeat's state for a human.
func heartbeatState(s mailbox.ServingState) string {
	switch s {
	case mailbox.ServingAbsent:
		return "absent (no broker serves it there; a pi 20.x parent writes none)"
	case mailbox.ServingDeadPID:
		return "left by a process that is gone"
	case mailbox.ServingStale:
		return "stale (not rewritten for 5 s)"
	}
	return s.String()
}

func usageError(stderr io.Writer, format string, args ...any) int {
	fmt.Fprintf(stderr, "child: "+format+"\n", args...)
	return exitUsage
}

// buildRequest makes the request from the flags, or from the JSON on stdin
// when neither --surface nor --value is given. target is empty when no
// parent session resolves.
func buildRequest(f askFlags, getenv func(string) string, stdin io.Reader) (wire.Request, string, error) {
	id, err := forward.NewRequestID()
	if err != nil {
		return wire.Request{}, "", err
	}
	now := time.Now().UnixMilli()
	if f.surface == "" && f.value == "" {
		return requestFromStdin(f, getenv, stdin, id, now)
	}
	if f.session == "" {
		return wire.Request{}, "", errors.New("--session (or $PI_SUBAGENT_SESSION_ID) is required: the asking session's id")
	}
	if f.surface == "" || f.value == "" {
		return wire.Request{}, "", errors.New("--surface and --value are required together (or give the request as JSON on stdin)")
	}
	ask := forward.Ask{
		Session: f.session, Agent: f.agent, Surface: f.surface, Value: f.value, Tool: f.tool,
		Cwd: f.cwd, Match: f.match, Boundary: f.boundary, Floor: f.floor,
	}
	for _, g := range f.grants {
		surface, pattern, ok := strings.Cut(g, ":")
		if !ok || surface == "" || pattern == "" {
			return wire.Request{}, "", fmt.Errorf("--grant %q: expected surface:pattern, e.g. bash:git status *", g)
		}
		ask.Grants = append(ask.Grants, wire.SuggestedGrant{Surface: surface, Pattern: pattern})
	}
	target, _ := forward.ResolveTarget(f.parent, f.session, getenv)
	req, err := ask.Request(id, orPlaceholder(target), now)
	return req, target, err
}

// orPlaceholder keeps a request encodable while no target resolved; such a
// request is never written.
func orPlaceholder(target string) string {
	if target == "" {
		return "unresolved"
	}
	return target
}

// maxStdinRequest bounds the request read from stdin, like a mailbox file.
const maxStdinRequest = mailbox.MaxFileSize

func requestFromStdin(f askFlags, getenv func(string) string, stdin io.Reader, id string, now int64) (wire.Request, string, error) {
	data, err := io.ReadAll(io.LimitReader(stdin, maxStdinRequest+1))
	if err != nil {
		return wire.Request{}, "", fmt.Errorf("reading the request from stdin: %w", err)
	}
	if len(data) > maxStdinRequest {
		return wire.Request{}, "", fmt.Errorf("the request on stdin is larger than %d bytes", maxStdinRequest)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return wire.Request{}, "", errors.New("no ask: give --surface and --value, or a JSON request on stdin")
	}
	if err := strictjson.Check(data); err != nil {
		return wire.Request{}, "", fmt.Errorf("the request on stdin: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return wire.Request{}, "", fmt.Errorf("the request on stdin must be a JSON object: %w", err)
	}
	str := func(key string) string {
		var s string
		_ = json.Unmarshal(m[key], &s)
		return s
	}
	session := str("requesterSessionId")
	if session == "" {
		session = f.session
	}
	if session == "" {
		return wire.Request{}, "", errors.New("the asking session is unknown: give requesterSessionId, --session or $PI_SUBAGENT_SESSION_ID")
	}
	target := str("targetSessionId")
	if target == "" || f.parent != "" {
		target, _ = forward.ResolveTarget(f.parent, session, getenv)
	}
	fill := func(key string, v any) {
		if _, ok := m[key]; !ok {
			raw, _ := json.Marshal(v)
			m[key] = raw
		}
	}
	fill("id", id)
	fill("createdAt", now)
	fill("requesterSessionId", session)
	fill("requesterAgentName", f.agent)
	fill("requesterPid", os.Getpid())
	raw, _ := json.Marshal(orPlaceholder(target))
	m["targetSessionId"] = raw
	if _, ok := m["message"]; !ok && str("value") != "" {
		tool := str("surface")
		fill("message", forward.Message(str("requesterAgentName"), tool, str("value")))
	}
	full, err := json.Marshal(m)
	if err != nil {
		return wire.Request{}, "", err
	}
	req, dropped, err := wire.DecodeRequest(full)
	if err != nil {
		return wire.Request{}, "", fmt.Errorf("the request on stdin: %w", err)
	}
	if len(dropped) > 0 {
		return wire.Request{}, "", fmt.Errorf("the request on stdin: %w", dropped[0])
	}
	return req, target, nil
}

// report prints the decision (appendDecision) and its one-line summary,
// and returns the exit status it calls for.
func report(stdout, stderr io.Writer, requestID string, d decision.Decision) int {
	if _, err := stdout.Write(appendDecision(nil, requestID, d)); err != nil {
		fmt.Fprintf(stderr, "child: writing the decision: %v\n", err)
	}
	fmt.Fprintf(stderr, "child: %s\n", d.Summary())
	switch {
	case d.Approved():
		return exitAllowed
	case d.Unavailable():
		return exitUnavailable
	}
	return exitDenied
}
