package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// brokerSpec says how to start one `broker serve` process.
type brokerSpec struct {
	// Label names the broker in progress lines and errors.
	Label string
	// Base is the run's private directory on the filesystem under test;
	// the mailbox root, the review log, the agent directory and the
	// broker's stderr all live in it.
	Base    string
	Session string
	// Config is a rules config file; "" is the embedded default.
	Config string
	// Terminal is deny or tty; tty runs the broker on a pseudo-terminal.
	Terminal string
	// Poll, when positive, runs the broker with --watch poll at this
	// interval.
	Poll time.Duration
	// CPUProfile is passed as the hidden --cpuprofile flag when set.
	CPUProfile string
	// Args are more flags for `broker serve`.
	Args []string
}

func (s brokerSpec) root() string    { return filepath.Join(s.Base, "root") }
func (s brokerSpec) logPath() string { return filepath.Join(s.Base, "review.jsonl") }

// brokerProc is a running broker. Stop it, whatever happens: the runner
// keeps every one it started and stops them on the way out.
type brokerProc struct {
	spec       brokerSpec
	cmd        *exec.Cmd
	stderrPath string
	pty        *pty
	exited     chan struct{}
	waitErr    error
	started    time.Time
}

// startupTimeout bounds how long a broker may take to publish its first
// heartbeat; plugin links start before it does.
const startupTimeout = 30 * time.Second

// startBroker starts a broker and returns once its heartbeat names it,
// which is when it serves: the inbox watch is armed before the first
// heartbeat is written.
func startBroker(ctx context.Context, bin string, spec brokerSpec) (*brokerProc, error) {
	b, err := launchBroker(bin, spec)
	if err != nil {
		return nil, err
	}
	if err := b.waitReady(ctx, startupTimeout); err != nil {
		b.stop(10 * time.Second)
		return nil, err
	}
	return b, nil
}

// launchBroker starts the process without waiting for it to serve.
func launchBroker(bin string, spec brokerSpec) (*brokerProc, error) {
	args := []string{"serve", "--session", spec.Session, "--root", spec.root(), "--log", spec.logPath(), "--terminal", spec.Terminal}
	if spec.Config != "" {
		args = append(args, "--config", spec.Config)
	}
	if spec.Poll > 0 {
		args = append(args, "--watch", "poll", "--poll-interval", spec.Poll.String())
	}
	if spec.CPUProfile != "" {
		args = append(args, "--cpuprofile", spec.CPUProfile)
	}
	args = append(args, spec.Args...)
	stderrPath := filepath.Join(spec.Base, "broker-"+sanitizeLabel(spec.Label)+".stderr")
	stderr, err := os.OpenFile(stderrPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("broker %s: %w", spec.Label, err)
	}
	defer stderr.Close() // the child has its own copy once started

	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), mailbox.EnvAgentDir+"="+filepath.Join(spec.Base, "agent"))
	cmd.Stdout, cmd.Stderr = stderr, stderr
	// Pdeathsig takes the broker down if the driver dies without
	// cleaning up (kill -9); the orderly path is stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var term *pty
	if spec.Terminal == "tty" {
		term, err = openPTY()
		if err != nil {
			return nil, fmt.Errorf("broker %s: %w", spec.Label, err)
		}
		// A session of its own with the pty as its controlling
		// terminal: the prompt opens /dev/tty.
		cmd.Stdin = term.slave
		cmd.SysProcAttr.Setsid = true
		cmd.SysProcAttr.Setctty = true
		cmd.SysProcAttr.Ctty = 0
	} else {
		// Its own process group keeps a Ctrl-C at the driver's terminal
		// away from it: the driver stops it in order.
		cmd.SysProcAttr.Setpgid = true
	}
	b := &brokerProc{spec: spec, cmd: cmd, stderrPath: stderrPath, pty: term, exited: make(chan struct{})}
	b.started = time.Now()
	if err := cmd.Start(); err != nil {
		if term != nil {
			term.close()
		}
		return nil, fmt.Errorf("broker %s: starting %s: %w", spec.Label, bin, err)
	}
	if term != nil {
		term.closeSlave()
	}
	go func() {
		b.waitErr = cmd.Wait()
		close(b.exited)
	}()
	return b, nil
}

func sanitizeLabel(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' {
			return '-'
		}
		return r
	}, s)
}

func (b *brokerProc) pid() int { return b.cmd.Process.Pid }

// waitReady waits for a heartbeat record that names this process.
func (b *brokerProc) waitReady(ctx context.Context, timeout time.Duration) error {
	path, err := mailbox.Layout{Root: b.spec.root()}.HeartbeatPath(b.spec.Session)
	if err != nil {
		return fmt.Errorf("broker %s: %w", b.spec.Label, err)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil {
			if hb, err := wire.DecodeHeartbeat(data); err == nil && hb.PID == b.pid() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker %s: waiting for it to serve: %w", b.spec.Label, context.Cause(ctx))
		case <-b.exited:
			return fmt.Errorf("broker %s exited before serving (%v): %s", b.spec.Label, b.waitErr, b.diagnostics())
		case <-deadline.C:
			return fmt.Errorf("broker %s: no heartbeat within %s: %s", b.spec.Label, timeout, b.diagnostics())
		case <-tick.C:
		}
	}
}

// diagnostics is the tail of what the broker wrote, for an error message.
func (b *brokerProc) diagnostics() string {
	data, _ := os.ReadFile(b.stderrPath)
	s := strings.TrimSpace(string(data))
	if len(s) > 2000 {
		s = "…" + s[len(s)-2000:]
	}
	if b.pty != nil {
		s += fmt.Sprintf(" (screen tail: %q)", lastBytes(b.pty.screenTail(), 400))
	}
	if s == "" {
		return "no output"
	}
	return s
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// errStopKilled says the broker had to be killed: it did not stop on
// SIGINT within the deadline.
var errStopKilled = errors.New("did not stop on SIGINT in time; killed")

// stop asks the broker to stop (SIGINT: it answers what is pending and
// withdraws its heartbeat), waits up to timeout, then kills its process
// group. It returns how long the orderly stop took. Safe to call twice.
func (b *brokerProc) stop(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	defer func() {
		if b.pty != nil {
			b.pty.close()
			b.pty = nil
		}
	}()
	select {
	case <-b.exited:
		return 0, nil
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGINT)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case <-b.exited:
		took := time.Since(start)
		if b.waitErr != nil {
			return took, fmt.Errorf("broker %s: %w: %s", b.spec.Label, b.waitErr, b.diagnostics())
		}
		return took, nil
	case <-deadline.C:
	}
	// The group: the broker and anything of its own it left behind.
	_ = syscall.Kill(-b.pid(), syscall.SIGKILL)
	_ = b.cmd.Process.Kill()
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		return time.Since(start), fmt.Errorf("broker %s: pid %d survived SIGKILL for 10 s", b.spec.Label, b.pid())
	}
	return time.Since(start), fmt.Errorf("broker %s: %w", b.spec.Label, errStopKilled)
}
