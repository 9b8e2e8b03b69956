// Package interop runs the real agent CLIs (Claude Code, Codex) against
// courier's hook adapter (`child hook`) and a real broker, each CLI driven
// by a scripted model endpoint on 127.0.0.1, inside a network namespace
// with only loopback. `make interop` installs the pinned CLIs, builds the
// binaries and runs this package's test binary under `unshare -n`; without
// the environment it sets, every test here skips (see README.md).
//
// This file is the harness the Claude Code and Codex suites share: the
// gate, the built binaries, a case directory (a git work tree whose origin
// is a local bare repository, a mailbox root, a home), brokers (headless or
// at a tty in a private tmux server), and the logs kept for a failure.
package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
)

// The environment `make interop` sets. EnvDir is the gate: without it every
// test skips.
const (
	// EnvDir is the CLI cache (INTEROP_CACHE); its presence opens the gate.
	EnvDir = "COURIER_INTEROP_DIR"
	// EnvClaude is the npm prefix Claude Code is installed under.
	EnvClaude = "COURIER_INTEROP_CLAUDE"
	// EnvCodex is the npm prefix Codex is installed under.
	EnvCodex = "COURIER_INTEROP_CODEX"
	// EnvBin is the directory of the built broker and child.
	EnvBin = "COURIER_BIN"
)

// The deadlines of the harness's waits. A CLI's whole run gets RunTimeout;
// the rest are for things that take well under a second when all is well.
const (
	// ServeTimeout bounds the wait for a broker's heartbeat.
	ServeTimeout = 15 * time.Second
	// ScreenTimeout bounds the wait for text on a tmux screen.
	ScreenTimeout = 60 * time.Second
	// RunTimeout bounds one run of an agent CLI.
	RunTimeout = 3 * time.Minute
	// pollEvery is how often a wait looks again.
	pollEvery = 25 * time.Millisecond
)

// Tools are what `make interop` installed and built.
type Tools struct {
	// Bin holds the built courier binaries.
	Bin string
	// Broker and Child are the built binaries' paths.
	Broker, Child string
	// ClaudePrefix and CodexPrefix are the npm prefixes the pinned CLIs
	// are installed under (their node_modules are inside).
	ClaudePrefix, CodexPrefix string
}

var (
	netnsOnce sync.Once
	netnsErr  error
)

// Require is the gate every interop test calls first. Without the
// environment of `make interop` the test skips; with it, the test fails
// unless it runs in a network namespace whose only interface is an up
// loopback, and unless the binaries are where the environment says.
func Require(t *testing.T) Tools {
	t.Helper()
	if os.Getenv(EnvDir) == "" {
		t.Skip("the interop suite runs the real agent CLIs offline: run `make interop`")
	}
	netnsOnce.Do(func() { netnsErr = checkLoopbackOnly() })
	if netnsErr != nil {
		t.Fatalf("interop: %v (make interop runs the tests under unshare -n)", netnsErr)
	}
	tools := Tools{
		Bin:          os.Getenv(EnvBin),
		ClaudePrefix: os.Getenv(EnvClaude),
		CodexPrefix:  os.Getenv(EnvCodex),
	}
	if tools.Bin == "" {
		t.Fatalf("interop: %s is not set: the directory of the built broker and child", EnvBin)
	}
	tools.Broker = filepath.Join(tools.Bin, "broker")
	tools.Child = filepath.Join(tools.Bin, "child")
	for _, p := range []string{tools.Broker, tools.Child} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("interop: %v (make interop builds it)", err)
		}
	}
	return tools
}

// checkLoopbackOnly says why this process's network namespace is not one
// with only an up loopback, or nil when it is. It asks the kernel over
// netlink (net.Interfaces): /sys/class/net shows the namespace of whoever
// mounted sysfs, so under `unshare -n` alone it still lists the host's
// interfaces.
func checkLoopbackOnly() error {
	ifaces, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("listing the network interfaces: %w", err)
	}
	var names []string
	for _, i := range ifaces {
		names = append(names, i.Name)
	}
	if len(ifaces) != 1 || ifaces[0].Flags&net.FlagLoopback == 0 {
		return fmt.Errorf("the network interfaces are %v, want only the loopback: not an isolated network namespace", names)
	}
	if ifaces[0].Flags&net.FlagUp == 0 {
		return fmt.Errorf("%s is down: 127.0.0.1 is unreachable", ifaces[0].Name)
	}
	return nil
}

// Case is one test's world: a directory that is kept (and named in the
// log) when the test fails, removed when it passes.
type Case struct {
	T     *testing.T
	Tools Tools
	// Dir is the case directory; everything below lives in it.
	Dir string
	// Work is a git work tree on branch main with one commit, and a
	// branch feature-x one commit ahead; its origin is Origin.
	Work string
	// Origin is the bare repository the work tree pushes to; empty at
	// first (no branch).
	Origin string
	// Root is the mailbox root (created, empty).
	Root string
	// Home is HOME (and TMPDIR is Home/tmp) for every process of the case.
	Home string

	mu   sync.Mutex
	logs []string
	seq  atomic.Int64
}

// NewCase makes the case directory, the repositories and the mailbox root.
func NewCase(t *testing.T, tools Tools) *Case {
	t.Helper()
	name := regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	// Short: a tmux socket path lives below it (108 bytes at most).
	dir, err := os.MkdirTemp("", "ci-"+name+"-")
	if err != nil {
		t.Fatalf("making the case directory: %v", err)
	}
	c := &Case{T: t, Tools: tools, Dir: dir,
		Work: filepath.Join(dir, "work"), Origin: filepath.Join(dir, "origin.git"),
		Root: filepath.Join(dir, "mailbox"), Home: filepath.Join(dir, "home")}
	t.Cleanup(c.finish)
	for _, d := range []string{c.Root, c.Home, filepath.Join(c.Home, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatalf("making %s: %v", d, err)
		}
	}
	c.Git(dir, "init", "-q", "--bare", c.Origin)
	c.Git(dir, "init", "-q", "-b", "main", c.Work)
	c.Git(c.Work, "remote", "add", "origin", c.Origin)
	c.WriteFile(filepath.Join(c.Work, "README"), "interop case\n")
	c.Git(c.Work, "add", "README")
	c.Git(c.Work, "commit", "-q", "-m", "first")
	c.Git(c.Work, "branch", "feature-x")
	return c
}

// finish keeps a failed case's directory and prints its logs' tails.
func (c *Case) finish() {
	if !c.T.Failed() && os.Getenv("COURIER_INTEROP_KEEP") == "" {
		_ = os.RemoveAll(c.Dir)
		return
	}
	c.mu.Lock()
	logs := append([]string(nil), c.logs...)
	c.mu.Unlock()
	for _, p := range logs {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		const tail = 4000
		if len(data) > tail {
			data = append([]byte("…"), data[len(data)-tail:]...)
		}
		c.T.Logf("== %s\n%s", p, data)
	}
	c.T.Logf("the case directory is kept: %s", c.Dir)
}

// LogPath names a new log file of the case (numbered, so runs keep their
// order) and lists it among those printed when the test fails.
func (c *Case) LogPath(name string) string {
	p := filepath.Join(c.Dir, "logs", fmt.Sprintf("%02d-%s", c.seq.Add(1), name))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		c.T.Fatalf("making the log directory: %v", err)
	}
	c.mu.Lock()
	c.logs = append(c.logs, p)
	c.mu.Unlock()
	return p
}

// WriteFile writes a file of the case (0600), failing the test on error.
func (c *Case) WriteFile(path, content string) {
	c.T.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		c.T.Fatalf("making %s: %v", filepath.Dir(path), err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		c.T.Fatalf("writing %s: %v", path, err)
	}
}

// Env is the environment of every process of the case: a PATH with the
// built binaries first, HOME and TMPDIR in the case, a fixed git identity,
// and nothing else of the test's own environment (no API keys, no proxy).
func (c *Case) Env(extra ...string) []string {
	env := []string{
		"PATH=" + c.Tools.Bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + c.Home,
		"TMPDIR=" + filepath.Join(c.Home, "tmp"),
		"LANG=C.UTF-8",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=interop", "GIT_AUTHOR_EMAIL=interop@example.invalid",
		"GIT_COMMITTER_NAME=interop", "GIT_COMMITTER_EMAIL=interop@example.invalid",
	}
	return append(env, extra...)
}

// Git runs git in dir with the case's environment and returns its stdout.
func (c *Case) Git(dir string, args ...string) string {
	c.T.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = c.Env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.T.Fatalf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// Pushed says whether the bare origin has the branch, read from the bare
// repository itself.
func (c *Case) Pushed(branch string) bool {
	c.T.Helper()
	cmd := exec.Command("git", "--git-dir", c.Origin, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	cmd.Env = c.Env()
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false
	default:
		c.T.Fatalf("reading %s from %s: %v", branch, c.Origin, err)
		return false
	}
}

// Broker is a running `broker serve`.
type Broker struct {
	c *Case
	// Session is the session it serves.
	Session string
	// ReviewLog is its review log's path.
	ReviewLog string
	// Tty is its terminal when it runs with --terminal tty; nil otherwise.
	Tty *Tmux

	cmd     *exec.Cmd
	waited  chan error
	stopped bool
}

// BrokerOptions say how to start a broker.
type BrokerOptions struct {
	// Session is the served session (required).
	Session string
	// Config is the rules config's content; empty for the embedded defaults.
	Config string
	// Terminal is "deny" (headless, the default) or "tty" (in a private
	// tmux server, answered with Broker.Tty).
	Terminal string
}

// StartBroker starts `broker serve` on the case's mailbox root and waits
// until its heartbeat says it serves. It is stopped when the test ends.
func (c *Case) StartBroker(opts BrokerOptions) *Broker {
	c.T.Helper()
	if opts.Terminal == "" {
		opts.Terminal = "deny"
	}
	b := &Broker{c: c, Session: opts.Session, ReviewLog: c.LogPath("review-" + opts.Session + ".jsonl")}
	args := []string{"serve", "--session", opts.Session, "--root", c.Root, "--log", b.ReviewLog, "--terminal", opts.Terminal}
	if opts.Config != "" {
		cfg := filepath.Join(c.Dir, "config-"+opts.Session+".json")
		c.WriteFile(cfg, opts.Config)
		args = append(args, "--config", cfg)
	}
	switch opts.Terminal {
	case "deny":
		out := c.LogPath("broker-" + opts.Session + ".log")
		f, err := os.Create(out)
		if err != nil {
			c.T.Fatalf("creating %s: %v", out, err)
		}
		defer f.Close()
		b.cmd = exec.Command(c.Tools.Broker, args...)
		b.cmd.Dir = c.Dir
		b.cmd.Env = c.Env()
		b.cmd.Stdout, b.cmd.Stderr = f, f
		if err := b.cmd.Start(); err != nil {
			c.T.Fatalf("starting the broker: %v", err)
		}
		b.waited = make(chan error, 1)
		go func() { b.waited <- b.cmd.Wait() }()
	case "tty":
		b.Tty = c.StartTmux("broker-"+opts.Session, c.Dir, c.Env(), append([]string{c.Tools.Broker}, args...)...)
	default:
		c.T.Fatalf("StartBroker: terminal %q: want deny or tty", opts.Terminal)
	}
	c.T.Cleanup(b.Stop)
	b.WaitServing()
	return b
}

// WaitServing waits (up to ServeTimeout) until the broker's heartbeat says
// it serves.
func (b *Broker) WaitServing() {
	b.c.T.Helper()
	layout := mailbox.Layout{Root: b.c.Root}
	deadline := time.Now().Add(ServeTimeout)
	for {
		s, err := layout.CheckServing(b.Session, time.Now())
		if err == nil && s.State == mailbox.ServingAlive {
			return
		}
		if time.Now().After(deadline) {
			b.c.T.Fatalf("the broker of %q is not serving after %s: %v %v%s", b.Session, ServeTimeout, s.State, err, b.tail())
		}
		time.Sleep(pollEvery)
	}
}

// tail is what the broker showed, for a failure message.
func (b *Broker) tail() string {
	if b.Tty != nil {
		return "\nscreen:\n" + b.Tty.Screen()
	}
	return ""
}

// Stop stops the broker with SIGTERM (its pid from its heartbeat or its
// process) and waits for it to exit. Idempotent.
func (b *Broker) Stop() {
	if b.cmd != nil {
		if b.cmd.ProcessState == nil {
			_ = b.cmd.Process.Signal(syscall.SIGTERM)
		}
		select {
		case err := <-b.waited:
			if err != nil {
				b.c.T.Errorf("the broker of %q exited: %v", b.Session, err)
			}
			b.waited <- nil // later Stops return at once
		case <-time.After(ServeTimeout):
			_ = b.cmd.Process.Kill()
			b.c.T.Errorf("the broker of %q did not stop within %s of SIGTERM", b.Session, ServeTimeout)
		}
		return
	}
	if b.Tty == nil || b.stopped {
		return
	}
	b.stopped = true
	// The heartbeat names the broker's pid (the pane's process is the
	// status wrapper): SIGTERM is a clean stop, with its exit status.
	s, err := mailbox.Layout{Root: b.c.Root}.CheckServing(b.Session, time.Now())
	if err == nil && s.State == mailbox.ServingAlive {
		_ = syscall.Kill(s.Heartbeat.PID, syscall.SIGTERM)
		deadline := time.Now().Add(ServeTimeout)
		for {
			if n, ok := b.Tty.Exited(); ok {
				if n != 0 {
					b.c.T.Errorf("the broker of %q exited %d after SIGTERM", b.Session, n)
				}
				break
			}
			if time.Now().After(deadline) {
				b.c.T.Errorf("the broker of %q did not stop within %s of SIGTERM", b.Session, ServeTimeout)
				break
			}
			time.Sleep(pollEvery)
		}
	}
	b.Tty.Stop()
}

// Reviews returns the review log's lines.
func (b *Broker) Reviews() []string {
	data, err := os.ReadFile(b.ReviewLog)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		b.c.T.Fatalf("reading the review log: %v", err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// WaitReview waits (up to timeout) for a review-log line matching pattern,
// and returns it.
func (b *Broker) WaitReview(pattern string, timeout time.Duration) string {
	b.c.T.Helper()
	re := regexp.MustCompile(pattern)
	deadline := time.Now().Add(timeout)
	for {
		for _, l := range b.Reviews() {
			if re.MatchString(l) {
				return l
			}
		}
		if time.Now().After(deadline) {
			b.c.T.Fatalf("no review-log line of %q matches %q after %s", b.Session, pattern, timeout)
		}
		time.Sleep(pollEvery)
	}
}

// Run runs a command to its end (or its deadline: it is killed then),
// with stdout and stderr in log files of the case named after name.
// It returns the exit status (-1 when killed) and the stdout.
func (c *Case) Run(ctx context.Context, name string, cmd *exec.Cmd) (int, []byte) {
	c.T.Helper()
	outPath, errPath := c.LogPath(name+".stdout"), c.LogPath(name+".stderr")
	var stdout bytes.Buffer
	errFile, err := os.Create(errPath)
	if err != nil {
		c.T.Fatalf("creating %s: %v", errPath, err)
	}
	defer errFile.Close()
	cmd.Stdout, cmd.Stderr = &stdout, errFile
	// The CLIs start helpers of their own: kill the whole group at the
	// deadline, and do not wait for pipes a helper holds open.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		c.T.Fatalf("starting %s: %v", name, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err = cmd.Wait()
	stop()
	if werr := os.WriteFile(outPath, stdout.Bytes(), 0o600); werr != nil {
		c.T.Fatalf("writing %s: %v", outPath, werr)
	}
	if ctx.Err() != nil {
		c.T.Fatalf("%s did not finish in time (%v); killed", name, ctx.Err())
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.Bytes()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.Bytes()
	default:
		c.T.Fatalf("%s: %v", name, err)
		return -1, nil
	}
}
