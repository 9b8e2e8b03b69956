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

// childBeside is siblingtest.Beside for this command and its NATS sibling.
func childBeside(t *testing.T, sibling string) (child, dir string) {
	t.Helper()
	return siblingtest.Beside(t, "child", natsBinary, sibling)
}

// printArgv is a fake sibling: it prints its argv, one word a line, and
// the transport in its environment, and exits 7.
const printArgv = "#!/bin/sh\nfor a in \"$0\" \"$@\"; do echo \"$a\"; done\necho \"env=$COURIER_TRANSPORT\"\nexit 7\n"

// TestNATSTransportExecsTheSibling: with a NATS URL, from the flag or the
// environment, this build runs courier-child-nats from beside itself with
// the same arguments and environment, for ask and hook; its exit status
// is the sibling's.
func TestNATSTransportExecsTheSibling(t *testing.T) {
	child, dir := childBeside(t, printArgv)
	for _, tt := range []struct {
		name string
		args []string
		env  string
	}{
		{"ask flag", []string{"ask", "--transport", "nats://127.0.0.1:4222", "--session", "c 1", "--surface", "bash", "--value", "ls -la"}, ""},
		{"ask env", []string{"ask", "--session", "c", "--surface", "bash", "--value", "ls"}, "tls://engine:4222"},
		{"hook", []string{"hook", "claude-code", "--transport", "nats://127.0.0.1:4222", "--nats-local", "--parent", "courier"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, child, tt.args...)
			cmd.Env = append(os.Environ(), runMainEnv+"=1", envTransport+"="+tt.env)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if code := cmd.ProcessState.ExitCode(); code != 7 {
				t.Fatalf("exit %d (%v), stderr %q: want the sibling's 7", code, err, stderr.String())
			}
			want := append([]string{filepath.Join(dir, natsBinary)}, tt.args...)
			want = append(want, "env="+tt.env)
			if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Errorf("the sibling got\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// TestNATSTransportWithoutTheSibling: no courier-child-nats beside this
// binary is exit 2 with an error naming the path expected.
func TestNATSTransportWithoutTheSibling(t *testing.T) {
	child, dir := childBeside(t, "")
	for _, args := range [][]string{
		{"ask", "--transport", "nats://127.0.0.1:4222", "--session", "c", "--surface", "bash", "--value", "ls"},
		{"hook", "codex", "--transport", "nats://127.0.0.1:4222"},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		cmd := exec.CommandContext(ctx, child, args...)
		cmd.Env = append(os.Environ(), runMainEnv+"=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		cancel()
		path := filepath.Join(dir, natsBinary)
		if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(stderr.String(), path+" is missing") || stdout.Len() != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q: want exit %d naming %s", args[0], code, stdout.String(), stderr.String(), exitUsage, path)
		}
	}
}

// TestNATSTransportRunsOnlyTheSiblingBesideItsRealPath: the sibling is
// found beside this binary's real path (os.Executable), never on $PATH
// nor beside a symlink to it: a courier-child-nats planted in a $PATH
// directory, or in the directory of a symlink that runs child, is not
// run, whether the real sibling is there or missing.
func TestNATSTransportRunsOnlyTheSiblingBesideItsRealPath(t *testing.T) {
	// The plant leaves a mark and exits 9.
	plantDir := t.TempDir()
	mark := filepath.Join(t.TempDir(), "planted-ran")
	plant := "#!/bin/sh\ntouch " + mark + "\nexit 9\n"
	if err := os.WriteFile(filepath.Join(plantDir, natsBinary), []byte(plant), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"ask", "--transport", "nats://127.0.0.1:4222", "--session", "c", "--surface", "bash", "--value", "ls"}
	for _, tt := range []struct {
		name    string
		sibling string
		// viaLink runs child through a symlink in plantDir.
		viaLink  bool
		wantExit int
	}{
		{"sibling missing, a plant on PATH", "", false, exitUsage},
		{"sibling present, a plant on PATH", printArgv, false, 7},
		{"through a symlink beside a plant", printArgv, true, 7},
		{"through a symlink beside a plant, sibling missing", "", true, exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(mark)
			child, dir := childBeside(t, tt.sibling)
			run := child
			if tt.viaLink {
				run = filepath.Join(plantDir, "child")
				os.Remove(run)
				if err := os.Symlink(child, run); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, run, args...)
			cmd.Env = append(os.Environ(), runMainEnv+"=1", "PATH="+plantDir+string(os.PathListSeparator)+os.Getenv("PATH"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tt.wantExit {
				t.Errorf("exit %d, stdout %q, stderr %q: want %d", code, stdout.String(), stderr.String(), tt.wantExit)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Errorf("the planted %s ran", natsBinary)
			}
			want := filepath.Join(dir, natsBinary)
			if tt.wantExit == 7 && !strings.HasPrefix(stdout.String(), want+"\n") {
				t.Errorf("ran %q, want %s", strings.SplitN(stdout.String(), "\n", 2)[0], want)
			}
			if tt.wantExit == exitUsage && !strings.Contains(stderr.String(), want+" is missing") {
				t.Errorf("stderr %q: want it to name %s", stderr.String(), want)
			}
		})
	}
}

// A courier-child-nats that is a copy of a build without NATS used to make
// child run itself again for ever, a core busy, before its --timeout was
// armed (found by review): it is refused at once.
func TestNATSTransportSiblingWithoutNATSIsRefused(t *testing.T) {
	child, dir := childBeside(t, "")
	if err := siblingtest.CopyExecutable(child, filepath.Join(dir, natsBinary)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, child, "ask", "--transport", "nats://127.0.0.1:4222", "--session", "c", "--surface", "bash", "--value", "ls")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	_ = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != exitUsage || !strings.Contains(stderr.String(), "it would run itself again") {
		t.Errorf("exit %d, stderr %q: want %d, refused", code, stderr.String(), exitUsage)
	}
}
