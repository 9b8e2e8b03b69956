package integration

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The tmux commands drive a real terminal: a program started with
// tmux-start runs in a detached tmux pane of a fixed size, on a tmux
// server of the script's own (-L, a socket name unique to this test
// process and script), killed when the script ends. Scripts read the
// screen with capture-pane and type with send-keys, as an operator would.
//
//	tmux-start [-x COLS] [-y ROWS] prog [args...]   start prog in the pane (cwd $WORK, the script's environment)
//	tmux-wait [-timeout D] REGEX                     wait until the screen matches; with !, until it does not
//	tmux-send [-l] KEYS...                           send-keys: key names (Enter, Escape, Down, C-c) or, with -l, literal text
//	tmux-exit N                                      wait until the pane's program exits, and assert its status
//
// The pane runs prog under tmuxrun, which records its exit status in a
// file: tmux does not always reap a pane's process promptly (here it was
// seen to leave an exited broker a zombie past a 10 s deadline), so its
// pane_dead_status is not something to wait on.
//
// Scripts that use them start with [!exec:tmux] skip.

// tmuxServers numbers the tmux servers of this test process.
var tmuxServers atomic.Int64

// tmuxEnv is what the pane's program sees of the script's environment.
var tmuxEnv = []string{"PATH", "HOME", "TMPDIR", "WORK", "PI_CODING_AGENT_DIR", "ROOT"}

// tmuxStatusFile is where tmuxrun records the exit status, in $WORK.
const tmuxStatusFile = ".tmux-exit-status"

// tmuxSessionKey is the script variable that names its tmux server.
const tmuxSessionKey = "TMUX_TEST_SOCKET"

// tmux runs a tmux client against the script's server and returns its
// stdout.
func tmux(ts *testscript.TestScript, args ...string) (string, error) {
	socket := ts.Getenv(tmuxSessionKey)
	if socket == "" {
		ts.Fatalf("no tmux server: run tmux-start first")
	}
	cmd := exec.Command("tmux", append([]string{"-L", socket, "-f", "/dev/null"}, args...)...)
	for _, k := range tmuxEnv {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

func cmdTmuxStart(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("tmux-start", flag.ContinueOnError)
	cols := fs.Int("x", 100, "columns")
	rows := fs.Int("y", 30, "rows")
	if neg || fs.Parse(args) != nil || fs.NArg() == 0 {
		ts.Fatalf("usage: tmux-start [-x COLS] [-y ROWS] prog [args...]")
	}
	if ts.Getenv(tmuxSessionKey) != "" {
		ts.Fatalf("tmux-start: a tmux server is already running for this script")
	}
	socket := fmt.Sprintf("courier-test-%d-%d", os.Getpid(), tmuxServers.Add(1))
	ts.Setenv(tmuxSessionKey, socket)
	var socketPath string
	ts.Defer(func() {
		_, _ = tmux(ts, "kill-server")
		// kill-server leaves the socket file behind.
		if socketPath != "" {
			_ = os.Remove(socketPath)
		}
	})
	// remain-on-exit keeps the pane, its last screen and its exit status
	// after the program ends, for tmux-exit and for the failure log. The
	// program runs directly (several arguments: no shell in between).
	start := []string{"start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", "courier", "-x", strconv.Itoa(*cols), "-y", strconv.Itoa(*rows), "-c", ts.Getenv("WORK")}
	start = append(start, "tmuxrun", ts.MkAbs(tmuxStatusFile))
	if _, err := tmux(ts, append(start, fs.Args()...)...); err != nil {
		ts.Fatalf("%v", err)
	}
	if path, err := tmux(ts, "display-message", "-p", "#{socket_path}"); err == nil {
		socketPath = strings.TrimSpace(path)
	}
}

// screen returns the pane's text, wrapped lines joined.
func screen(ts *testscript.TestScript) string {
	out, err := tmux(ts, "capture-pane", "-p", "-J", "-t", "courier")
	if err != nil {
		ts.Fatalf("%v", err)
	}
	return out
}

func cmdTmuxWait(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("tmux-wait", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait")
	if fs.Parse(args) != nil || fs.NArg() != 1 {
		ts.Fatalf("usage: tmux-wait [-timeout D] REGEX")
	}
	re, err := regexp.Compile(fs.Arg(0))
	if err != nil {
		ts.Fatalf("tmux-wait: %v", err)
	}
	deadline := time.Now().Add(*timeout)
	for {
		s := screen(ts)
		if re.MatchString(s) != neg {
			return
		}
		if time.Now().After(deadline) {
			what := "never showed"
			if neg {
				what = "still shows"
			}
			ts.Fatalf("after %s the screen %s %q:\n%s", *timeout, what, fs.Arg(0), s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func cmdTmuxSend(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: tmux-send [-l] KEYS...")
	}
	if _, err := tmux(ts, append([]string{"send-keys", "-t", "courier"}, args...)...); err != nil {
		ts.Fatalf("%v", err)
	}
}

func cmdTmuxExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tmux-exit N")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, err := os.ReadFile(ts.MkAbs(tmuxStatusFile))
		if err == nil {
			if got := strings.TrimSpace(string(status)); got != args[0] {
				ts.Fatalf("the pane's program exited %s, want %s:\n%s", got, args[0], screen(ts))
			}
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("the pane's program is still running:\n%s", screen(ts))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tmuxRunMain is the tmuxrun command: "tmuxrun STATUSFILE prog [args...]"
// runs prog on the pane's terminal and writes its exit status to
// STATUSFILE when it ends.
func tmuxRunMain() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: tmuxrun STATUSFILE prog [args...]")
		os.Exit(2)
	}
	// Ctrl-C in the pane signals the whole foreground process group. The
	// program handles it; tmuxrun must outlive the program to record its
	// status. Caught signals are reset at exec, so the program keeps the
	// default handling.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt, syscall.SIGTERM)
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	status := "-1"
	if cmd.ProcessState != nil {
		status = strconv.Itoa(cmd.ProcessState.ExitCode())
	} else {
		fmt.Fprintf(os.Stderr, "tmuxrun: %v\n", err)
	}
	tmp := os.Args[1] + ".tmp"
	if err := os.WriteFile(tmp, []byte(status+"\n"), 0o600); err == nil {
		_ = os.Rename(tmp, os.Args[1])
	}
}
