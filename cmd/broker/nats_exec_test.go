//go:build !nats

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/internal/sibling/siblingtest"
)

// brokerBeside is siblingtest.Beside for this command and its NATS sibling.
func brokerBeside(t *testing.T, sibling string) (broker, dir string) {
	t.Helper()
	return siblingtest.Beside(t, "broker", natsBinary, sibling)
}

// printArgs is a fake sibling: it prints its argv, one word a line, and
// exits 7.
const printArgs = "#!/bin/sh\nfor a in \"$0\" \"$@\"; do echo \"$a\"; done\nexit 7\n"

// runBroker runs broker with args, main in the test binary, and returns
// its exit status, stdout and stderr.
func runBroker(t *testing.T, broker string, args ...string) (int, string, string) {
	t.Helper()
	return runBrokerWith(t, nil, broker, args...)
}

// runBrokerWith is runBroker with extra inherited files (fd 3 on).
func runBrokerWith(t *testing.T, extra []*os.File, broker string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, broker, args...)
	cmd.ExtraFiles = extra
	cmd.Env = append(os.Environ(), mainEnv+"=1", "PI_CODING_AGENT_DIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("broker did not run: %v", err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// Any NATS flag makes this build, which links no NATS package, run
// courier-broker-nats from beside itself with the same arguments; its exit
// status is the sibling's. Without one it serves as itself.
func TestNATSFlagsExecTheSibling(t *testing.T) {
	broker, dir := brokerBeside(t, printArgs)
	for _, args := range [][]string{
		{"serve", "--session", "s 1", "--nats-listen", "127.0.0.1:0"},
		{"serve", "--nats", "nats://127.0.0.1:4222", "--nats-local", "--session", "s"},
		{"serve", "--session", "s", "--terminal", "relay", "--relay-transport", "nats://127.0.0.1:4222", "--relay-owner", "o"},
		{"serve", "--session", "s", "--nats-replicas", "3"},
	} {
		t.Run(args[len(args)-1], func(t *testing.T) {
			code, out, stderr := runBroker(t, broker, args...)
			if code != 7 {
				t.Fatalf("exit %d, stderr %q: want the sibling's 7", code, stderr)
			}
			want := strings.Join(append([]string{filepath.Join(dir, natsBinary)}, args...), "\n") + "\n"
			if out != want {
				t.Errorf("the sibling ran with\n%s\nwant\n%s", out, want)
			}
		})
	}
	// Without a NATS flag the broker is not replaced: a usage error of its
	// own, not the sibling's 7.
	if code, _, stderr := runBroker(t, broker, "serve"); code != exitUsage || !strings.Contains(stderr, "--session ID is required") {
		t.Errorf("serve without --session: exit %d, stderr %q", code, stderr)
	}
}

// Without the sibling, a NATS flag is a usage error that names the path
// looked at and how to build it.
func TestNATSFlagsWithoutTheSibling(t *testing.T) {
	broker, dir := brokerBeside(t, "")
	code, _, stderr := runBroker(t, broker, "serve", "--session", "s", "--nats-listen", "127.0.0.1:0")
	if code != exitUsage {
		t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, stderr)
	}
	for _, want := range []string{filepath.Join(dir, natsBinary), "is missing", "-tags nats"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not say %q", stderr, want)
		}
	}
}

// The review of the split: main sealed every inherited descriptor before
// the exec, so --config /dev/fd/3 or a password file given as <(…) reached
// the sibling closed (or as one of its own descriptors). The sibling is
// run before anything is sealed.
func TestNATSSiblingInheritsDescriptors(t *testing.T) {
	broker, _ := brokerBeside(t, "#!/bin/sh\ncat /dev/fd/3\nexit 7\n")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("the operator's password"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	defer r.Close()
	code, out, stderr := runBrokerWith(t, []*os.File{r}, broker, "serve", "--session", "s", "--nats", "nats://127.0.0.1:4222",
		"--nats-user", "u", "--nats-password-file", "/dev/fd/3")
	if code != 7 || out != "the operator's password" {
		t.Errorf("exit %d, the sibling read %q from fd 3 (stderr %q): want 7 and the password", code, out, stderr)
	}
}

// The review of the split: a courier-broker-nats that is this binary (a
// link to it) or a copy of a build without NATS made the broker run itself
// again for ever, silently, a core busy. Both are refused at once.
func TestNATSSiblingThatIsNoSiblingIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(broker, sibling string) error
		want string
	}{
		{"a copy of a build without NATS", siblingtest.CopyExecutable, "it would run itself again"},
		{"a link to the broker", func(broker, sibling string) error { return os.Symlink(broker, sibling) }, "is this binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broker, dir := brokerBeside(t, "")
			if err := tc.make(broker, filepath.Join(dir, natsBinary)); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runBroker(t, broker, "serve", "--session", "s", "--nats-listen", "127.0.0.1:0")
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q: want %d and %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}

// A sibling others could have written is not run: whoever writes it would
// serve the session's asks.
func TestNATSSiblingWritableByOthersIsRefused(t *testing.T) {
	broker, dir := brokerBeside(t, printArgs)
	sib := filepath.Join(dir, natsBinary)
	if err := os.Chmod(sib, 0o775); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runBroker(t, broker, "serve", "--session", "s", "--nats-listen", "127.0.0.1:0")
	if code != exitUsage || out != "" || !strings.Contains(stderr, "refusing sibling binary "+sib) {
		t.Errorf("exit %d, stdout %q, stderr %q: want it refused", code, out, stderr)
	}
}
