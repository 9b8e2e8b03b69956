package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
)

// NoopBinary is the Go program that does nothing (cmd/courier-bench/
// courier-bench-noop), which `make build` puts beside the child: the
// process's start and exit alone, against which the child's own work is
// measured.
const NoopBinary = "courier-bench-noop"

// targetChildOwn is issue 17's goal for a `child ask` or `child hook`
// process: its p50 beyond a program that does nothing.
const targetChildOwn = 1500 * time.Microsecond

// hookEvent is what Claude Code sends a PermissionRequest hook for a
// subagent's Bash call (shared/reference/agent-hooks-observed.md, Claude
// Code 2.1.328), asking for the rule-resolved command.
func hookEvent(cwd string) []byte {
	return fmt.Appendf(nil, `{"session_id": "b648dec7-a2b0-4fd4-8836-9c8c24580d69", "transcript_path": "/nonexistent/transcript.jsonl", "cwd": %q, "prompt_id": "30fb67f5-8682-4007-a973-63acfb09c827", "permission_mode": "default", "agent_id": "a8f2c355829900d95", "agent_type": "general-purpose", "effort": {"level": "medium"}, "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": %q, "description": "Show the working tree status"}, "permission_suggestions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "git status *"}], "behavior": "allow", "destination": "localSettings"}]}`, cwd, ruleAsk.Value)
}

// hookAllow is the answer a rule's allow must print, exactly.
const hookAllow = `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`

// childEnv is the environment of a `child` process: the driver's, with
// pi's parent variables removed (the parent is a flag, or deliberately
// absent), the transport settings removed (a COURIER_TRANSPORT of the
// operator's would carry the file child's asks over NATS; the transport is
// a flag too) and the agent directory pointed into the run's private base.
func childEnv(agentDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == forward.EnvRouterParent || k == forward.EnvSubagentParent || k == mailbox.EnvAgentDir || k == "COURIER_SESSION" ||
			k == "COURIER_TRANSPORT" || strings.HasPrefix(k, "COURIER_NATS_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, mailbox.EnvAgentDir+"="+agentDir)
}

// process is one kind of process the child scenario runs: its command
// line, its stdin, and what it must end with.
type process struct {
	args     []string
	stdin    []byte
	wantExit int
	// wantOut is a string stdout must hold; exact, that stdout must be
	// it, trailing newline aside.
	wantOut string
	exact   bool
}

// run runs the process to completion and times it from before fork to
// after exit; cpu is the user and system time the process used.
func (p process) run(ctx context.Context, bin string, env []string) (took, cpu time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, p.args...)
	cmd.Env = env
	if p.stdin != nil {
		cmd.Stdin = bytes.NewReader(p.stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Run()
	took = time.Since(start)
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return took, cpu, fmt.Errorf("running %s: %w", filepath.Base(bin), err)
	}
	out := stdout.String()
	switch {
	case code != p.wantExit:
		return took, cpu, fmt.Errorf("%s exited %d, want %d: %s", filepath.Base(bin), code, p.wantExit, strings.TrimSpace(stderr.String()))
	case p.exact && strings.TrimSuffix(out, "\n") != p.wantOut:
		return took, cpu, fmt.Errorf("%s printed %q, want exactly %q (stderr: %s)", filepath.Base(bin), out, p.wantOut, strings.TrimSpace(stderr.String()))
	case !p.exact && !strings.Contains(out, p.wantOut):
		return took, cpu, fmt.Errorf("%s printed %q, want it to contain %q", filepath.Base(bin), strings.TrimSpace(out), p.wantOut)
	}
	return took, cpu, nil
}

// ChildResult compares real child processes with a program that does
// nothing and with the in-library asks of the same broker, all run in
// turn in one loop.
type ChildResult struct {
	// Ask is `child ask` of a rule-resolved command: fork, exec, Go
	// start-up, the round trip, exit.
	Ask Summary `json:"child_ask"`
	// Hook is `child hook claude-code` answering a subagent's
	// PermissionRequest for the same command.
	Hook Summary `json:"child_hook"`
	// Start is `child ask` with no parent to forward to: it decides
	// "unavailable" at once without touching the broker: start-up, flags,
	// this session's grants, the answer printed, exit.
	Start Summary `json:"child_start_only"`
	// Noop is a Go program that does nothing (NoopBinary): process start
	// and exit alone.
	Noop Summary `json:"noop_process"`
	// InLibrary is the same broker's rule-resolved round trip through one
	// long-lived forward.Client, asked in the same loop; it looks for the
	// answer as a child does (PollFirst) and holds no watch.
	InLibrary Summary `json:"in_library"`
	// CPU is the p50 of each process's user+system time, in µs, by kind
	// (ask, hook, start, noop).
	CPUus map[string]int64 `json:"cpu_p50_us"`
	// HookMissing says why there is no hook figure (a child without
	// `child hook`).
	HookMissing string `json:"hook_missing,omitempty"`
	Failed      int    `json:"failed"`
	Error       string `json:"error,omitempty"`
}

// Own is a process's p50 beyond the program that does nothing: the
// child's own work, start-up included. ok is false unless both were
// measured.
func (c *ChildResult) Own(s Summary) (time.Duration, bool) {
	if c == nil || s.N == 0 || c.Noop.N == 0 {
		return 0, false
	}
	return s.P50 - c.Noop.P50, true
}

// childScenario: the default rules, nobody at the terminal; real `child
// ask` and `child hook` processes for a rule-resolved ask, `child ask`
// with no parent, a program that does nothing, and the same ask in the
// library, in turn (the order rotating each round, so that none always
// follows a warm broker), up to Children rounds or ChildrenFor.
func (r *runner) childScenario(ctx context.Context, fr *FSResult, base string, _ bool) error {
	cfgPath, err := writeBenchConfig(base)
	if err != nil {
		return err
	}
	spec := brokerSpec{Label: fr.Label + "/child", Base: base, Session: session, Terminal: "deny", Config: cfgPath}
	b, err := r.start(ctx, spec)
	if err != nil {
		return err
	}
	c := r.cfg.Counts
	r.progress("[%s] %d rounds of: `child ask`, `child hook claude-code`, `child ask` with no parent, a program that does nothing, an in-library ask (at most %s)", fr.Label, c.Children, c.ChildrenFor)
	ch, err := r.runChildren(ctx, spec, c.Warmup, c.Children, c.ChildrenFor)
	if err != nil {
		return err
	}
	fr.Children = ch
	if ch.Failed > 0 {
		fr.Errors = append(fr.Errors, fmt.Sprintf("child processes: %d failed: %s", ch.Failed, ch.Error))
	}
	if ch.HookMissing != "" {
		fr.Errors = append(fr.Errors, "child hook: not measured: "+ch.HookMissing)
	}
	own := func(s Summary) string {
		if d, ok := ch.Own(s); ok {
			return us(d)
		}
		return "not measured"
	}
	r.progress("[%s]   p50: child ask %s, child hook %s, no parent %s, nothing %s, in-library %s; own work: ask %s, hook %s, no parent %s", fr.Label,
		us(ch.Ask.P50), us(ch.Hook.P50), us(ch.Start.P50), us(ch.Noop.P50), us(ch.InLibrary.P50), own(ch.Ask), own(ch.Hook), own(ch.Start))
	_, err = b.stop(30 * time.Second)
	return err
}

// runChildren runs the loop of childScenario against the broker of spec.
func (r *runner) runChildren(ctx context.Context, spec brokerSpec, warmup, n int, within time.Duration) (*ChildResult, error) {
	child, noop := r.bin("child"), r.bin(NoopBinary)
	env := childEnv(filepath.Join(spec.Base, "agent"))
	root := spec.root()
	common := []string{"--session", "bench-proc", "--agent", "bench", "--surface", ruleAsk.Surface, "--value", ruleAsk.Value, "--root", root, "--timeout", askTimeout.String()}
	kinds := []struct {
		name string
		bin  string
		p    process
	}{
		{"ask", child, process{args: append([]string{"ask", "--parent", spec.Session}, common...), wantOut: `"kind":"rule"`}},
		{"hook", child, process{args: []string{"hook", "claude-code", "--parent", spec.Session, "--root", root, "--timeout", askTimeout.String()}, stdin: hookEvent(spec.Base), wantOut: hookAllow, exact: true}},
		{"start", child, process{args: append([]string{"ask"}, common...), wantExit: 3, wantOut: `"unavailable":true`}},
		{"noop", noop, process{}},
	}
	res := &ChildResult{CPUus: map[string]int64{}}
	if _, err := os.Stat(noop); err != nil {
		return nil, fmt.Errorf("the program that does nothing: %w (make build makes it)", err)
	}
	hasHook := hasHookCommand(ctx, child, env)
	if !hasHook {
		res.HookMissing = "this child has no `child hook` command"
	}
	d := newDriver(root, spec.Session, mailbox.WatchOptions{})
	client := d.client()
	defer client.Close()
	// The in-library asks look for their answers and never arm a watch:
	// an inotify watch of responses/ held by this process would spare
	// every child process's exit the teardown of its own watch (measured:
	// 10 to 14 ms for a child that armed one, on an idle directory; next
	// to none while another watch holds it), which no real child is
	// spared. It also makes them take the child's own path.
	client.PollFirst = askTimeout

	took := map[string][]time.Duration{}
	cpu := map[string][]time.Duration{}
	var firstErr error
	fail := func(err error) {
		res.Failed++
		if firstErr == nil {
			firstErr = err
		}
	}
	// Warm-up: the broker, the page cache, the inbox and this Client's
	// watch, none measured.
	for range max(warmup/10, 1) {
		for _, k := range kinds {
			if k.name != "hook" || hasHook {
				k.p.run(ctx, k.bin, env)
			}
		}
		d.ask(ctx, client, "bench-inlib", ruleAsk)
	}
	deadline := time.Now().Add(within)
	steps := len(kinds) + 1 // the processes, then the in-library ask
	for round := range n {
		if within > 0 && time.Now().After(deadline) {
			break
		}
		for j := range steps {
			i := (round + j) % steps
			if i == len(kinds) {
				t, err := d.ask(ctx, client, "bench-inlib", ruleAsk)
				if err != nil {
					fail(fmt.Errorf("in-library ask: %w", err))
				} else {
					took["lib"] = append(took["lib"], t)
				}
				continue
			}
			k := kinds[i]
			if k.name == "hook" && !hasHook {
				continue
			}
			t, c, err := k.p.run(ctx, k.bin, env)
			if ctx.Err() != nil {
				return res, context.Cause(ctx)
			}
			if err != nil {
				fail(fmt.Errorf("%s: %w", k.name, err))
				continue
			}
			took[k.name] = append(took[k.name], t)
			cpu[k.name] = append(cpu[k.name], c)
		}
	}
	res.Ask, res.Hook, res.Start, res.Noop = Summarize(took["ask"]), Summarize(took["hook"]), Summarize(took["start"]), Summarize(took["noop"])
	res.InLibrary = Summarize(took["lib"])
	for name, cs := range cpu {
		res.CPUus[name] = micros(Summarize(cs).P50)
	}
	if firstErr != nil {
		res.Error = firstErr.Error()
	}
	return res, nil
}

// hasHookCommand reports whether this child has `child hook` (its help
// exits 0), so that a child from before it is measured without the row.
func hasHookCommand(ctx context.Context, child string, env []string) bool {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, child, "hook", "--help")
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	return cmd.Run() == nil
}

// cell is the table cell of one kind's latencies (ask, hook, start, noop,
// lib).
func (c *ChildResult) cell(kind string) string {
	if c == nil {
		return na
	}
	s := map[string]Summary{"ask": c.Ask, "hook": c.Hook, "start": c.Start, "noop": c.Noop, "lib": c.InLibrary}[kind]
	if kind == "hook" && c.HookMissing != "" {
		return "not measured: " + c.HookMissing
	}
	cell := summaryCell(s)
	if kind == "ask" && c.Failed > 0 {
		cell += fmt.Sprintf(" %d FAILED", c.Failed)
	}
	return cell
}

// ownCell is the own work of ask, hook and a child with no parent.
func (c *ChildResult) ownCell() string {
	if c == nil {
		return na
	}
	var parts []string
	for _, s := range []Summary{c.Ask, c.Hook, c.Start} {
		if d, ok := c.Own(s); ok {
			parts = append(parts, fmt.Sprintf("%d", micros(d)))
		} else {
			parts = append(parts, "–")
		}
	}
	return strings.Join(parts, " / ")
}

// cpuCell is the p50 CPU time of each kind of process.
func (c *ChildResult) cpuCell() string {
	if c == nil || len(c.CPUus) == 0 {
		return na
	}
	var parts []string
	for _, k := range []string{"ask", "hook", "start", "noop"} {
		if v, ok := c.CPUus[k]; ok {
			parts = append(parts, fmt.Sprintf("%d", v))
		} else {
			parts = append(parts, "–")
		}
	}
	return strings.Join(parts, " / ")
}

// targets judges issue 17's goal for `child ask` and `child hook`: own
// work beyond start and exit ≤ 1.5 ms p50. A kind with failed processes is
// not judged.
func (c *ChildResult) targets() []Target {
	var out []Target
	for _, k := range []struct {
		name string
		s    Summary
	}{{"child ask own work (p50 − nothing's p50)", c.summary("ask")}, {"child hook own work (p50 − nothing's p50)", c.summary("hook")}} {
		t := Target{Name: k.name, Goal: "≤ 1500 µs"}
		if d, ok := c.Own(k.s); ok && c.Failed == 0 {
			t.Measured, t.Value, t.Met = fmt.Sprintf("%d µs", micros(d)), float64(micros(d)), d <= targetChildOwn
		} else {
			t.Measured, t.Missing = "not measured", true
		}
		out = append(out, t)
	}
	return out
}

func (c *ChildResult) summary(kind string) Summary {
	if c == nil {
		return Summary{}
	}
	if kind == "hook" {
		return c.Hook
	}
	return c.Ask
}
