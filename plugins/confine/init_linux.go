package confine

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// pluginExe is the verified plugin binary the host passed as fd 3: the
// init executes that open file, never a path someone could swap.
const pluginExe = "/proc/self/fd/3"

// exitInit is the init's status when it could not start the plugin.
const exitInit = 126

// Main runs the init: the arguments after Command. It returns the exit
// status: the plugin's own (128+signal when a signal ended it), 126 when
// the plugin could not be started confined, 2 for a usage error. Errors go
// to stderr, which the host reads as the plugin's.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	probe := fs.Bool("probe", false, "print that the init runs, and exit")
	network := fs.Bool("network", false, "keep the network (the link declared it)")
	rw := fs.String("rw", "", "the plugin's private directory, the only one it may write")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *probe {
		fmt.Fprintln(stdout, probeLine)
		return 0
	}
	argv := fs.Args()
	if len(argv) == 0 || *rw == "" {
		fmt.Fprintf(stderr, "courier %s: usage: %s --rw DIR [--network] -- ARGV...\n", Command, Command)
		return 2
	}
	if err := cloexecInherited(); err != nil {
		fmt.Fprintf(stderr, "courier %s: %v\n", Command, err)
		return exitInit
	}
	rules := rulesFor(*rw)
	cfg := landlockConfig(*network)
	if os.Getpid() != 1 {
		// No PID namespace: confine this process and become the plugin.
		err := execConfined(cfg, rules, argv)
		fmt.Fprintf(stderr, "courier %s: %v\n", Command, err)
		return exitInit
	}
	code, err := supervise(cfg, rules, argv)
	if err != nil {
		fmt.Fprintf(stderr, "courier %s: %v\n", Command, err)
	}
	return code
}

// supervise is the init as process 1 of the plugin's PID namespace: it
// starts the plugin confined, reaps every process re-parented to it, and
// returns with the plugin's status as soon as the plugin exits (the kernel
// then kills what is left of the namespace).
func supervise(cfg landlock.Config, rules []landlock.Rule, argv []string) (int, error) {
	// Not dumpable: a plugin that shares our uid (and, for a root broker,
	// capabilities in the user namespace) cannot ptrace the init to undo
	// its parent-death signal.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return exitInit, fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	type started struct {
		pid int
		err error
	}
	startc := make(chan started, 1)
	go func() {
		// The Landlock domain is put on this thread only, which starts
		// the plugin and then exits with the goroutine (it is never
		// unlocked): the init itself stays outside the plugin's domain,
		// where the plugin cannot ptrace or signal it.
		runtime.LockOSThread()
		if err := restrictThread(cfg, rules); err != nil {
			startc <- started{err: err}
			return
		}
		cmd := &exec.Cmd{
			Path: pluginExe, Args: argv, Env: os.Environ(), Dir: "/",
			Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
			ExtraFiles: []*os.File{os.NewFile(3, "plugin binary")},
		}
		if err := cmd.Start(); err != nil {
			startc <- started{err: fmt.Errorf("start plugin %s: %w", argv[0], err)}
			return
		}
		startc <- started{pid: cmd.Process.Pid}
	}()
	s := <-startc
	if s.err != nil {
		return exitInit, s.err
	}
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return exitInit, fmt.Errorf("wait: %w", err)
		case pid != s.pid:
			continue // an orphan of the plugin's, reaped
		case ws.Signaled():
			return 128 + int(ws.Signal()), nil
		default:
			return ws.ExitStatus(), nil
		}
	}
}

// execConfined confines this process and executes the plugin in its
// place (same pid, so the host's process group and kill still apply).
func execConfined(cfg landlock.Config, rules []landlock.Rule, argv []string) error {
	ppid := os.Getppid()
	runtime.LockOSThread()
	if err := restrictThread(cfg, rules); err != nil {
		return err
	}
	// The host set the parent-death signal on our first thread; a thread
	// the runtime started later has none, and the exec is done from this
	// one, so set it here, then check the host did not die meanwhile.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_PDEATHSIG): %w", err)
	}
	if os.Getppid() != ppid {
		return errors.New("the broker exited before the plugin started")
	}
	return fmt.Errorf("exec plugin %s: %w", argv[0], syscall.Exec(pluginExe, argv, os.Environ()))
}

// firstUnpassedFd is the first fd the plugin is not given: 0-2 are its
// stdio, 3 its binary.
const firstUnpassedFd = 4

// cloexecInherited marks every fd from firstUnpassedFd on close-on-exec,
// so that the plugin gets only stdio and its binary. The broker opens
// its own files close-on-exec, but an fd it inherited without (from a
// supervisor, a shell's 9</path) passes through every exec: Landlock
// checks opens by path, never reads and writes of an fd already open,
// so an inherited fd to the mailbox, the review log or the config would
// defeat it.
func cloexecInherited() error { return cloexecFrom(firstUnpassedFd) }

// SealInherited marks every fd from 3 on close-on-exec in the calling
// process: the broker calls it at start, so that nothing it inherited
// reaches any process it starts — a plugin that runs without the init
// (no namespaces here) included. Its own files are close-on-exec
// already, and what it hands a child on purpose (the plugin binary,
// ExtraFiles) is dup'ed into place by exec.
func SealInherited() error { return cloexecFrom(3) }

// cloexecFrom marks every open fd from first on close-on-exec.
func cloexecFrom(first int) error {
	err := unix.CloseRange(uint(first), ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Before Linux 5.11 there is no CLOSE_RANGE_CLOEXEC: go through the
	// open fds one by one.
	fds, derr := os.ReadDir("/proc/self/fd")
	if derr != nil {
		return fmt.Errorf("close_range: %w; list /proc/self/fd: %w", err, derr)
	}
	for _, e := range fds {
		fd, perr := strconv.Atoi(e.Name())
		if perr != nil || fd < first {
			continue
		}
		// The fd of the listing itself is closed by now: EBADF is fine.
		if _, ferr := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); ferr != nil && !errors.Is(ferr, unix.EBADF) {
			return fmt.Errorf("mark fd %d close-on-exec: %w", fd, ferr)
		}
	}
	return nil
}

// restrictThread puts the calling (locked) thread in a Landlock domain:
// no_new_privs, then the ruleset. Without Landlock it does nothing (Probe
// said so at start). A ruleset that cannot be built or enforced is an
// error: the plugin is not started less confined than the broker said.
func restrictThread(cfg landlock.Config, rules []landlock.Rule) error {
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}
