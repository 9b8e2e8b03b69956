package interop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Tmux is one program in a detached pane of a private tmux server (its
// socket in the case directory), sized TmuxCols×TmuxRows. Tests read the
// screen and type as a person would.
type Tmux struct {
	c      *Case
	name   string
	socket string
	// status is where the pane's wrapper writes the program's exit status.
	status  string
	stopped bool
}

// The pane's size.
const (
	TmuxCols = 120
	TmuxRows = 40
)

// statusWrapper runs the program and records its exit status: tmux does
// not always reap a pane's process promptly, so pane_dead_status is not
// something to wait on. The trap is a caught one, not an ignore, so the
// program still gets the default handling of INT and TERM.
const statusWrapper = `trap : INT TERM; "$@"; s=$?; echo $s >"$STATUS.tmp" && mv "$STATUS.tmp" "$STATUS"`

// StartTmux starts argv in dir with env (and TERM=tmux's own) in a new
// private tmux server. The server is killed, and its last screen kept in
// the case's logs, when the test ends.
func (c *Case) StartTmux(name, dir string, env []string, argv ...string) *Tmux {
	c.T.Helper()
	x := &Tmux{c: c, name: name,
		socket: filepath.Join(c.Dir, "tmux-"+name+".sock"),
		status: filepath.Join(c.Dir, "tmux-"+name+".status")}
	// remain-on-exit keeps the last screen for the failure log.
	args := []string{"start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", "main", "-x", strconv.Itoa(TmuxCols), "-y", strconv.Itoa(TmuxRows), "-c", dir,
		"-e", "STATUS=" + x.status, "sh", "-c", statusWrapper, "sh"}
	if _, err := x.run(env, append(args, argv...)...); err != nil {
		c.T.Fatalf("starting %s in tmux: %v", name, err)
	}
	c.T.Cleanup(x.Stop)
	return x
}

// run runs a tmux client of this server and returns its stdout.
func (x *Tmux) run(env []string, args ...string) (string, error) {
	cmd := exec.Command("tmux", append([]string{"-S", x.socket, "-f", "/dev/null"}, args...)...)
	cmd.Env = env
	if env == nil {
		cmd.Env = x.c.Env()
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// Screen is the pane's text now, wrapped lines joined.
func (x *Tmux) Screen() string {
	out, err := x.run(nil, "capture-pane", "-p", "-J", "-t", "main")
	if err != nil {
		return fmt.Sprintf("(no screen: %v)", err)
	}
	return out
}

// WaitScreen waits (up to timeout) until the screen matches pattern, and
// returns the screen; the test fails and stops when it never does.
func (x *Tmux) WaitScreen(pattern string, timeout time.Duration) string {
	x.c.T.Helper()
	ctx, cancel := context.WithTimeout(x.c.T.Context(), timeout)
	defer cancel()
	s, err := x.AwaitScreen(ctx, pattern)
	if err != nil {
		x.c.T.Fatal(err)
	}
	return s
}

// AwaitScreen is WaitScreen for a goroutine other than the test's: it
// waits until ctx is done, and returns an error instead of stopping the
// test.
func (x *Tmux) AwaitScreen(ctx context.Context, pattern string) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("screen pattern %q: %w", pattern, err)
	}
	start := time.Now()
	for {
		s := x.Screen()
		if re.MatchString(s) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("after %s the screen of %s never showed %q (%w):\n%s",
				time.Since(start).Round(time.Millisecond), x.name, pattern, ctx.Err(), s)
		case <-time.After(pollEvery):
		}
	}
}

// SendKeys is Send for a goroutine other than the test's.
func (x *Tmux) SendKeys(keys ...string) error {
	_, err := x.run(nil, append([]string{"send-keys", "-t", "main"}, keys...)...)
	return err
}

// Send sends tmux key names (y, Enter, Escape, Down, C-c).
func (x *Tmux) Send(keys ...string) {
	x.c.T.Helper()
	if _, err := x.run(nil, append([]string{"send-keys", "-t", "main"}, keys...)...); err != nil {
		x.c.T.Fatalf("%v", err)
	}
}

// SendText types text literally.
func (x *Tmux) SendText(text string) {
	x.c.T.Helper()
	if _, err := x.run(nil, "send-keys", "-t", "main", "-l", text); err != nil {
		x.c.T.Fatalf("%v", err)
	}
}

// Exited returns the program's exit status once it has exited.
func (x *Tmux) Exited() (int, bool) {
	data, err := os.ReadFile(x.status)
	if err != nil {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return -1, true
	}
	return n, true
}

// WaitExit waits (up to timeout) for the program to exit and returns its
// status.
func (x *Tmux) WaitExit(timeout time.Duration) int {
	x.c.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if n, ok := x.Exited(); ok {
			return n
		}
		if time.Now().After(deadline) {
			x.c.T.Fatalf("%s still runs after %s:\n%s", x.name, timeout, x.Screen())
		}
		time.Sleep(pollEvery)
	}
}

// PanePID is the pid of the pane's process (the status wrapper; the
// program is its child).
func (x *Tmux) PanePID() int {
	x.c.T.Helper()
	out, err := x.run(nil, "display-message", "-p", "-t", "main", "#{pane_pid}")
	if err != nil {
		x.c.T.Fatalf("%v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		x.c.T.Fatalf("tmux pane_pid %q: %v", out, err)
	}
	return pid
}

// Stop keeps the last screen in the case's logs and kills the server
// (and with it the pane's program, by SIGHUP). Idempotent.
func (x *Tmux) Stop() {
	if x.stopped {
		return
	}
	x.stopped = true
	_ = os.WriteFile(x.c.LogPath("screen-"+x.name+".txt"), []byte(x.Screen()), 0o600)
	_, _ = x.run(nil, "kill-server")
	_ = os.Remove(x.socket)
}
