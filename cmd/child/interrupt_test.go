package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/seed6639df8c/courier/mailbox"
)

// runMainEnv makes this test binary run the child's main (TestMain), so
// that a test can signal a real child process.
const runMainEnv = "COURIER_CHILD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestInterruptAbandonsTheRequest: Ctrl-C (or SIGTERM) while a child
// waits for its answer removes the request and reports nobody answered,
// for child ask and child hook alike. The handling is armed just before
// the request is written, no longer at start (decision 0021).
func TestInterruptAbandonsTheRequest(t *testing.T) {
	const parent = "parent"
	event := `{"session_id": "b648dec7", "cwd": "/work/proj", "agent_id": "a8f2c355829900d95", "agent_type": "general-purpose", "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "git status --short"}}`
	tests := []struct {
		name     string
		args     []string
		stdin    string
		sig      syscall.Signal
		wantExit int
		wantOut  string
	}{
		{"ask, SIGINT", []string{"ask", "--parent", parent, "--session", "child-1", "--surface", "bash", "--value", "ls"}, "", syscall.SIGINT, exitUnavailable, `"unavailable":true`},
		{"ask, SIGTERM", []string{"ask", "--parent", parent, "--session", "child-1", "--surface", "bash", "--value", "ls"}, "", syscall.SIGTERM, exitUnavailable, `"unavailable":true`},
		// Nobody answered: the hook prints nothing, so the agent decides.
		{"hook, SIGINT", []string{"hook", "claude-code", "--parent", parent}, event, syscall.SIGINT, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			layout := mailbox.Layout{Root: root}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// A live parent that never answers: this process's heartbeat,
			// written once (it goes stale in 5 s; the test needs less).
			beat := &mailbox.HeartbeatPublisher{Layout: layout, Session: parent}
			if err := beat.Publish(); err != nil {
				t.Fatal(err)
			}
			if err := layout.EnsureInbox(parent); err != nil {
				t.Fatal(err)
			}
			inbox, err := layout.RequestsDir(parent)
			if err != nil {
				t.Fatal(err)
			}
			w, err := fsnotify.NewWatcher()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if err := w.Add(inbox); err != nil {
				t.Fatal(err)
			}

			cmd := exec.CommandContext(ctx, os.Args[0], append(tt.args, "--root", root, "--timeout", "25s")...)
			cmd.Env = append(cleanEnv(), runMainEnv+"=1")
			cmd.Stdin = strings.NewReader(tt.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			if err := waitForRequest(ctx, w, inbox, exited); err != nil {
				cmd.Process.Kill()
				t.Fatalf("%v; stdout: %s; stderr: %s", err, stdout.String(), stderr.String())
			}
			// The handling is armed once the answer is not a quick one,
			// before the watch of responses/ (decision 0030): a signal
			// sent before that would end the child by the signal.
			if err := waitForWatch(ctx, cmd.Process.Pid, exited); err != nil {
				cmd.Process.Kill()
				t.Fatalf("%v; stdout: %s; stderr: %s", err, stdout.String(), stderr.String())
			}
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			err = <-exited
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode() // -1 when a signal ended it
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantExit {
				t.Errorf("exit %d (%v), want %d; stderr: %s", code, err, tt.wantExit, stderr.String())
			}
			if tt.wantOut == "" && stdout.Len() > 0 || !strings.Contains(stdout.String(), tt.wantOut) {
				t.Errorf("stdout %q, want %q", stdout.String(), tt.wantOut)
			}
			if left := requestFiles(t, inbox); len(left) > 0 {
				t.Errorf("requests left in the inbox after the interrupt: %v", left)
			}
		})
	}
}

// cleanEnv is this process's environment without pi's parent and agent
// directory variables, so that only the flags place the child.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PI_AGENT_ROUTER_PARENT_SESSION_ID", "PI_SUBAGENT_PARENT_SESSION", "PI_SUBAGENT_SESSION_ID", "PI_CODING_AGENT_DIR", "COURIER_SESSION", envBrokerUser, runMainEnv:
			continue
		}
		env = append(env, kv)
	}
	return env
}

// waitForRequest waits until the inbox holds a request file, while the
// child runs.
func waitForRequest(ctx context.Context, w *fsnotify.Watcher, inbox string, exited <-chan error) error {
	for {
		if names, err := requestNames(inbox); err != nil || len(names) > 0 {
			return err
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			return err
		case err := <-exited:
			return fmt.Errorf("the child ended (%v) before writing a request", err)
		case <-ctx.Done():
			return fmt.Errorf("no request appeared in %s: %w", inbox, ctx.Err())
		}
	}
}

// waitForWatch waits until process pid holds an inotify instance: a
// child arms its watch of responses/ once its first look is over, after
// it armed its handling of Ctrl-C. /proc is looked at every millisecond:
// nothing signals the arming.
func waitForWatch(ctx context.Context, pid int, exited <-chan error) error {
	fds := fmt.Sprintf("/proc/%d/fd", pid)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		entries, err := os.ReadDir(fds)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && target == "anon_inode:inotify" {
				return nil
			}
		}
		select {
		case <-tick.C:
		case err := <-exited:
			return fmt.Errorf("the child ended (%v) before it armed its watch", err)
		case <-ctx.Done():
			return fmt.Errorf("the child armed no watch: %w", ctx.Err())
		}
	}
}

func requestFiles(t *testing.T, inbox string) []string {
	t.Helper()
	names, err := requestNames(inbox)
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// requestNames lists the inbox's request files (not a writer's
// temporary files, which start with a dot).
func requestNames(inbox string) ([]string, error) {
	entries, err := os.ReadDir(inbox)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	return names, nil
}
