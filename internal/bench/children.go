package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
)

// childEnv is the environment of a `child` process: the driver's, with
// pi's parent variables removed (the parent is a flag, or deliberately
// absent) and the agent directory pointed into the run's private base.
func childEnv(agentDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == forward.EnvRouterParent || k == forward.EnvSubagentParent || k == mailbox.EnvAgentDir {
			continue
		}
		env = append(env, kv)
	}
	return append(env, mailbox.EnvAgentDir+"="+agentDir)
}

// runChild runs one `child` process to completion and times it from
// before fork to after exit. wantExit is the exit status the ask must
// end with, and wantOut a string its stdout must hold.
func runChild(ctx context.Context, bin string, env, args []string, wantExit int, wantOut string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return took, fmt.Errorf("running child: %w", err)
	}
	if code != wantExit {
		return took, fmt.Errorf("child exited %d, want %d: %s", code, wantExit, strings.TrimSpace(stderr.String()))
	}
	if !strings.Contains(stdout.String(), wantOut) {
		return took, fmt.Errorf("child printed %q, want it to contain %q", strings.TrimSpace(stdout.String()), wantOut)
	}
	return took, nil
}

// ChildResult compares real child processes with the in-library asks of
// the same broker.
type ChildResult struct {
	// Ask is `child ask` of a rule-resolved command, serially: fork,
	// exec, Go start-up, the round trip, exit.
	Ask Summary `json:"child_ask"`
	// Start is `child ask` with no parent to forward to: it decides
	// "unavailable" at once without touching the broker, so it is the
	// process start-up and exit cost alone.
	Start Summary `json:"child_start_only"`
	// InLibrary is the same broker's rule-resolved serial round trip
	// through forward.Client, for comparison.
	InLibrary Summary `json:"in_library"`
	Failed    int     `json:"failed"`
	Error     string  `json:"error,omitempty"`
}

// runChildren measures n serial `child ask` processes against the
// broker serving target, and n that have no parent, interleaved, stopping
// early when within has passed.
func runChildren(ctx context.Context, bin, root, agentDir, target string, n int, within time.Duration) (ChildResult, error) {
	env := childEnv(agentDir)
	common := []string{"ask", "--session", "bench-proc", "--agent", "bench", "--surface", "bash", "--value", ruleAsk.Value, "--root", root, "--timeout", askTimeout.String()}
	var res ChildResult
	var asks, starts []time.Duration
	var firstErr error
	deadline := time.Now().Add(within)
	for i := range 2 * n {
		if within > 0 && i%2 == 0 && time.Now().After(deadline) {
			break
		}
		var took time.Duration
		var err error
		if i%2 == 0 {
			took, err = runChild(ctx, bin, env, append([]string{common[0], "--parent", target}, common[1:]...), 0, `"kind":"rule"`)
			if err == nil {
				asks = append(asks, took)
			}
		} else {
			took, err = runChild(ctx, bin, env, common, 3, `"unavailable":true`)
			if err == nil {
				starts = append(starts, took)
			}
		}
		if ctx.Err() != nil {
			return res, context.Cause(ctx)
		}
		if err != nil {
			res.Failed++
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	res.Ask, res.Start = Summarize(asks), Summarize(starts)
	if firstErr != nil {
		res.Error = firstErr.Error()
	}
	return res, nil
}
