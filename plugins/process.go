package plugins

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-plugin/runner"

	"github.com/seed6639df8c/courier/internal/fileperm"
	"github.com/seed6639df8c/courier/plugins/confine"
)

// Errors of a plugin binary that disable its link.
var (
	// ErrBinary: the path names nothing runnable (missing, not a regular
	// file, not executable), or a file others could have written
	// (writable by group or others, another user's, in a directory they
	// can write; wrapping fileperm.ErrRefused).
	ErrBinary = errors.New("unusable plugin binary")
	// ErrChecksum: the binary's SHA-256 is not the pinned one.
	ErrChecksum = errors.New("plugin binary checksum mismatch")
)

// minimalPath is the only PATH a plugin gets: enough to run system tools,
// nothing from the broker's own PATH.
const minimalPath = "PATH=/usr/local/bin:/usr/bin:/bin"

// openVerified opens the binary at path, checks that it is a regular
// executable file that only its owner may write, owned by this process's
// user or root, in a directory that group and others cannot write (or a
// sticky one), and that its SHA-256 is want (hex), hashing with a fresh
// hash. The caller closes the file.
func openVerified(path, want string) (*os.File, error) {
	wantSum, err := hex.DecodeString(want)
	if err != nil || len(wantSum) != sha256.Size {
		return nil, fmt.Errorf("%w: pinned sha256 %q is not 64 hex digits", ErrChecksum, want)
	}
	f, err := openChecked(path)
	if err != nil {
		return nil, err
	}
	got, err := sumOf(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	if subtle.ConstantTimeCompare(got, wantSum) != 1 {
		f.Close()
		return nil, fmt.Errorf("%w: %s has sha256 %x, the config pins %s", ErrChecksum, path, got, want)
	}
	return f, nil
}

// sumOf is the SHA-256 of the binary f (opened from path), read from its
// current offset with a fresh hash.
func sumOf(f *os.File, path string) ([]byte, error) {
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrBinary, path, err)
	}
	return h.Sum(nil), nil
}

// openChecked opens the binary at path after the checks openVerified
// makes, all but the sum.
func openChecked(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBinary, err)
	}
	if err := checkBinary(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkBinary is what openVerified checks of the open binary f before
// its sum.
func checkBinary(f *os.File, path string) error {
	fi, err := f.Stat()
	switch {
	case err != nil:
		err = fmt.Errorf("%w: %w", ErrBinary, err)
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%w: %s is not a regular file (%s)", ErrBinary, path, fi.Mode().Type())
	case fi.Mode().Perm()&0o111 == 0:
		err = fmt.Errorf("%w: %s is not executable (%s)", ErrBinary, path, fi.Mode().Perm())
	default:
		// Whoever may write the binary can change it in place after
		// the checksum (the exec reads the same inode); whoever may
		// write its directory can put another file in its place, which
		// disables the link (its failure verdict: a deny-list that
		// defers on failure no longer denies) and, where the exec goes
		// by path (not Linux), swaps the program between the checksum
		// and the exec.
		if perr := fileperm.CheckFile("plugin binary", path, fi, fileperm.SelfOrRoot); perr != nil {
			err = fmt.Errorf("%w: %w", ErrBinary, perr)
		} else if perr := fileperm.CheckDir("plugin binary", path, fileperm.SelfOrRoot); perr != nil {
			err = fmt.Errorf("%w: %w", ErrBinary, perr)
		}
	}
	return err
}

// procRunner is the go-plugin runner for one plugin process. courier uses
// its own runner rather than go-plugin's Cmd path because that path forces
// the broker's stdin on the plugin, signals only the direct pid, and
// checks the checksum of a path it then executes separately.
type procRunner struct {
	path   string // the configured binary, for names and messages
	cmd    *exec.Cmd
	bin    *os.File   // the verified binary, executed through /proc/self/fd
	stdout *firstLine // keeps the first line, for messages
	stderr io.ReadCloser
	fork   func(func() error) error

	mu     sync.Mutex
	pid    int
	killed bool          // Kill was called: a SIGKILL status is the broker's
	exited chan struct{} // closed when Wait has returned
	status string        // how the process ended, once exited is closed
}

var _ runner.Runner = (*procRunner)(nil)

// newProcRunner prepares the process for link spec. env is what go-plugin
// put in its template command (cookie, versions, client certificate,
// socket directory); tmp is the private directory go-plugin made for the
// socket, which becomes the plugin's TMPDIR too.
//
// With a plan that confines, what starts is the plan's init (see package
// confine), which starts the plugin, fd 3 and stdio passed on, in its PID
// namespace and Landlock domain; network keeps the host's network for a
// link that declared it.
func newProcRunner(path, sum string, args, env []string, tmp string, fork func(func() error) error, plan *confine.Plan, network bool) (*procRunner, error) {
	bin, err := openVerified(path, sum)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path: execPath(bin, path),
		Args: append([]string{path}, args...),
		Env:  append([]string{minimalPath, "TMPDIR=" + tmp}, env...),
		// A neutral working directory: a plugin must not depend on, or
		// learn, where the broker runs.
		Dir: "/",
		// Stdin stays nil (/dev/null): the plugin reads nothing of ours.
		SysProcAttr: sysProcAttr(),
	}
	if initPath, initArgs, attr, ok := plan.Wrap(cmd.Args, tmp, network); ok {
		cmd.Path, cmd.Args, cmd.SysProcAttr = initPath, initArgs, attr
	}
	if runtime.GOOS == "linux" {
		cmd.ExtraFiles = []*os.File{bin}
	}
	r := &procRunner{path: path, cmd: cmd, bin: bin, fork: fork, exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		r.stdout = &firstLine{r: stdout}
		r.stderr, err = cmd.StderrPipe()
	}
	if err != nil {
		bin.Close()
		return nil, fmt.Errorf("plugin %s: pipes: %w", path, err)
	}
	return r, nil
}

// Start starts the process on the supervisor's forking thread (see
// forker), then drops the broker's handle on the binary.
func (r *procRunner) Start(context.Context) error {
	defer r.bin.Close()
	if err := r.fork(r.cmd.Start); err != nil {
		return fmt.Errorf("start plugin %s: %w", r.path, err)
	}
	r.mu.Lock()
	r.pid = r.cmd.Process.Pid
	r.mu.Unlock()
	return nil
}

// Wait waits for the process to exit and records how it ended.
func (r *procRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	r.mu.Lock()
	// A kill after the plugin exited on its own changes nothing: only a
	// SIGKILL the broker sent makes the status the broker's doing.
	if !(r.killed && sigkilled(r.cmd.ProcessState)) {
		r.status = exitDescription(r.cmd.ProcessState, err)
	}
	r.mu.Unlock()
	close(r.exited)
	return err
}

// exitStatus waits up to wait for the process to end and says how it
// ended; ok is false when it is still running or was killed by the
// broker (its status then says nothing about the plugin).
func (r *procRunner) exitStatus(wait time.Duration) (status string, ok bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.exited:
	case <-t.C:
		return "", false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, r.status != ""
}

// sigkilled reports whether the process ended by SIGKILL.
func sigkilled(ps *os.ProcessState) bool {
	if ps == nil {
		return false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// exitDescription is "exit status 3" or "killed by signal 9". A confined
// plugin's init reports the plugin's signal as 128+N, as a shell does.
func exitDescription(ps *os.ProcessState, err error) string {
	if ps == nil {
		if err != nil {
			return sanitize(err.Error())
		}
		return ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("killed by signal %d, %v", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exit status %d", ps.ExitCode())
}

// Kill kills the plugin's whole process group, so helpers it started die
// with it, then the process itself. Killing twice is harmless.
func (r *procRunner) Kill(context.Context) error {
	r.mu.Lock()
	pid := r.pid
	r.killed = true
	r.mu.Unlock()
	if pid <= 0 {
		return nil
	}
	killGroup(pid)
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill plugin %s: %w", r.path, err)
	}
	return nil
}

func (r *procRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *procRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *procRunner) Name() string          { return r.path }

// ID is the pid, empty before Start: go-plugin's Kill does nothing for an
// empty ID.
func (r *procRunner) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

// Diagnose adds nothing to go-plugin's "Unrecognized remote plugin
// message" error: the supervisor explains a failed handshake itself, from
// the line the plugin printed (explainStart).
func (r *procRunner) Diagnose(context.Context) string { return "" }

func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// forker runs process starts on one OS thread that lives as long as its
// supervisor. Linux delivers Pdeathsig when the thread that forked a child
// exits, not the process; an ordinary goroutine may fork from any thread,
// and a thread can go away under the broker. A locked thread that exits
// only at Close makes the signal mean what it should: the plugin dies when
// its supervisor (or the broker) does.
type forker struct {
	jobs chan func()
	done chan struct{}
}

func newForker() *forker {
	f := &forker{jobs: make(chan func()), done: make(chan struct{})}
	go func() {
		// Never unlocked: the thread exits with the goroutine.
		runtime.LockOSThread()
		defer close(f.done)
		for job := range f.jobs {
			job()
		}
	}()
	return f
}

// do runs start on the forking thread.
func (f *forker) do(start func() error) error {
	errc := make(chan error, 1)
	f.jobs <- func() { errc <- start() }
	return <-errc
}

// stop ends the thread; plugins it started receive their death signal.
func (f *forker) stop() {
	close(f.jobs)
	<-f.done
}

// signalGroup is kill(2) on a process group.
func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }
