package mailbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// short is a context that cuts LockServing's grace for a lock that stays
// held, so a refusal is quick.
func short(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// A second holder of one session is refused with who holds it and since
// when; another session, or the same one after the release, is not.
func TestLockServingOneHolder(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	first, err := l.LockServing(context.Background(), "parent")
	if err != nil {
		t.Fatal(err)
	}
	taken := time.Now()
	_, err = l.LockServing(short(t), " parent ") // the same session, normalized
	var served *ServedError
	if !errors.As(err, &served) || !errors.Is(err, ErrServed) {
		t.Fatalf("second LockServing: %v, want a *ServedError", err)
	}
	if served.PID != os.Getpid() || served.Since.IsZero() || served.Since.After(taken) || taken.Sub(served.Since) > time.Minute {
		t.Errorf("ServedError = %+v, want pid %d and a start before %s", served, os.Getpid(), taken)
	}
	if want := fmt.Sprintf("session %q is already served by pid %d (since ", "parent", os.Getpid()); !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start %q", err, want)
	}
	other, err := l.LockServing(context.Background(), "other")
	if err != nil {
		t.Fatalf("another session: %v", err)
	}
	defer other.Release()

	fi, err := os.Stat(first.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("lock file mode %v, want 0600", fi.Mode().Perm())
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("a second Release: %v", err)
	}
	again, err := l.LockServing(context.Background(), "parent")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	again.Release()
}

// A holder that lets go within the grace is waited for: its successor,
// started a moment too early, is not turned away.
func TestLockServingWaitsOutAReleasingHolder(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	first, err := l.LockServing(context.Background(), "parent")
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond) // releases while the successor waits
		first.Release()
		close(released)
	}()
	second, err := l.LockServing(context.Background(), "parent")
	<-released
	if err != nil {
		t.Fatalf("the successor was refused: %v", err)
	}
	second.Release()
}

// The kernel drops the lock of a process that dies, SIGKILL included: a
// broker killed that way never keeps its successor out.
func TestLockServingAfterTheHolderIsKilled(t *testing.T) {
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$")
	cmd.Env = append(os.Environ(), "COURIER_LOCK_HOLDER_ROOT="+root)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	buf := make([]byte, 6)
	if _, err := stdout.Read(buf); err != nil || string(buf[:5]) != "held\n" {
		t.Fatalf("the holder did not take the lock: %q %v", buf, err)
	}
	l := Layout{Root: root}
	_, err = l.LockServing(short(t), "parent")
	var served *ServedError
	if !errors.As(err, &served) || served.PID != cmd.Process.Pid {
		t.Fatalf("while the holder lives: %v, want served by pid %d", err, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	lock, err := l.LockServing(context.Background(), "parent")
	if err != nil {
		t.Fatalf("after SIGKILL: %v", err)
	}
	lock.Release()
}

// TestLockHolderProcess is the holder of TestLockServingAfterTheHolderIsKilled,
// run as a process of its own; it does nothing in a normal run.
func TestLockHolderProcess(t *testing.T) {
	root := os.Getenv("COURIER_LOCK_HOLDER_ROOT")
	if root == "" {
		t.Skip("run by TestLockServingAfterTheHolderIsKilled")
	}
	if _, err := (Layout{Root: root}).LockServing(context.Background(), "parent"); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	time.Sleep(time.Minute) // until killed
	os.Exit(0)
}

// A lock file that is not a plain file of ours is refused, never locked
// through.
func TestLockServingRefusesAPlantedFile(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	path, err := l.ServingLockPath("parent")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if _, err := l.LockServing(context.Background(), "parent"); err == nil || errors.Is(err, ErrServed) {
		t.Fatalf("LockServing through a symlink: %v, want a refusal", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the symlink's target was created: %v", err)
	}
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.LockServing(context.Background(), "parent"); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("LockServing on a FIFO: %v, want a refusal naming it", err)
	}
}

// What is written in the lock file is only a message: a holder that has
// not written it yet is "another process", and a record that lies about
// its pid is never signalled or trusted.
func TestServedErrorWithoutARecord(t *testing.T) {
	e := &ServedError{Session: "p", Path: "/r/courier/serving/p.lock"}
	if got, want := e.Error(), `session "p" is already served by another process; one broker serves a session (its lock: /r/courier/serving/p.lock)`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	l := Layout{Root: t.TempDir()}
	held, err := l.LockServing(context.Background(), "p")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	for _, record := range []string{"", "{", `{"pid":-1,"since":5}`, `{"pid":99999999999,"since":5}`} {
		if err := os.WriteFile(held.Path(), []byte(record), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := l.LockServing(short(t), "p")
		var served *ServedError
		if !errors.As(err, &served) || served.PID != 0 || !served.Since.IsZero() {
			t.Errorf("record %q: %v (%+v), want served by an unknown process", record, err, served)
		}
	}
}

// A root is created only where pi would create it: pi's own root with its
// parents; a --root only inside an existing directory; a child creates
// no --root at all and names the path it looked in.
func TestPrepareAndCheckRoot(t *testing.T) {
	base := t.TempDir()
	t.Setenv(EnvAgentDir, filepath.Join(base, "agent")) // does not exist yet
	piRoot, err := ResolveRoot("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, root string
		// prepared: PrepareRoot creates it; checked: CheckRoot accepts it.
		prepared, checked bool
	}{
		{"pi's own root, its agent directory missing", piRoot, true, true},
		{"a --root in an existing directory", filepath.Join(base, "root"), true, false},
		{"a --root in a missing directory", filepath.Join(base, "nonexistent", "dir"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Layout{Root: tt.root}
			err := l.CheckRoot()
			if tt.checked != (err == nil) {
				t.Errorf("CheckRoot: %v, want accepted %v", err, tt.checked)
			}
			if err != nil && (!errors.Is(err, ErrNoRoot) || !strings.Contains(err.Error(), tt.root)) {
				t.Errorf("CheckRoot: %v, want ErrNoRoot naming %s", err, tt.root)
			}
			if _, serr := os.Stat(tt.root); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("CheckRoot created %s", tt.root)
			}
			err = l.PrepareRoot()
			if tt.prepared != (err == nil) {
				t.Fatalf("PrepareRoot: %v, want created %v", err, tt.prepared)
			}
			if err != nil {
				if !errors.Is(err, ErrNoRoot) || !strings.Contains(err.Error(), tt.root) || !strings.Contains(err.Error(), filepath.Dir(tt.root)) {
					t.Errorf("PrepareRoot: %v, want ErrNoRoot naming %s and its parent", err, tt.root)
				}
				if _, serr := os.Stat(filepath.Dir(tt.root)); !errors.Is(serr, os.ErrNotExist) {
					t.Errorf("PrepareRoot created the parent of %s", tt.root)
				}
				return
			}
			fi, err := os.Stat(tt.root)
			if err != nil || fi.Mode().Perm() != 0o700 {
				t.Fatalf("the root after PrepareRoot: %v %v, want a 0700 directory", fi, err)
			}
			if err := l.CheckRoot(); err != nil {
				t.Errorf("CheckRoot of the prepared root: %v", err)
			}
		})
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	for name, f := range map[string]func() error{"PrepareRoot": Layout{Root: file}.PrepareRoot, "CheckRoot": Layout{Root: file}.CheckRoot} {
		if err := f(); err == nil || !strings.Contains(err.Error(), "not a directory") {
			t.Errorf("%s of a file: %v, want not a directory", name, err)
		}
	}
}

// The lock is held through a read-only descriptor: one open for writing
// for the broker's whole life would keep the mailbox's filesystem from
// being remounted read-only (EBUSY), as the reliability campaign's
// read-only fault does.
func TestServingLockHoldsNoWriteDescriptor(t *testing.T) {
	lock, err := Layout{Root: t.TempDir()}.LockServing(context.Background(), "parent")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	info, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", lock.f.Fd()))
	if err != nil {
		t.Skipf("no /proc fdinfo: %v", err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		if octal, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(octal), 8, 64)
			if err != nil {
				t.Fatal(err)
			}
			if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
				t.Errorf("the lock's descriptor has flags %#o, want it read-only", flags)
			}
			return
		}
	}
	t.Fatalf("no flags in fdinfo:\n%s", info)
}
