package plugins

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/chain"
	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
)

func TestVerdictsRoundTrip(t *testing.T) {
	h := load(t, Options{}, spec("t"))
	if len(h.errs) > 0 {
		t.Fatal(h.errs)
	}
	d, ok := h.ask("allow")
	if !ok || d.State != decision.StateApproved {
		t.Fatalf("allow: %+v %v", d, ok)
	}
	if got, want := d.DecidedBy, (provenance.Authorizer{Name: "t", Verdict: provenance.VerdictAllow}); got != want {
		t.Errorf("allow decidedBy = %#v, want %#v", got, want)
	}
	d, ok = h.ask("deny")
	if !ok || d.State != decision.StateDeniedWithReason || d.DenialReason != "denied by testauthz" {
		t.Fatalf("deny: %+v %v", d, ok)
	}
	if a, isAuth := d.DecidedBy.(provenance.Authorizer); !isAuth || a.Verdict != provenance.VerdictDeny || *a.Reason != "denied by testauthz" {
		t.Errorf("deny decidedBy = %#v", d.DecidedBy)
	}
	if _, ok := h.ask("something else"); ok {
		t.Error("defer decided")
	}
	// The envelope caps the plugin's allow on a path ask.
	if d, ok := h.askOn("path_write", "allow"); ok {
		t.Errorf("allow on path_write decided: %+v", d)
	}
	verdicts := h.entries(reviewlog.LinkVerdict)
	if len(verdicts) != 4 || verdicts[3]["capped"] != true || verdicts[3]["linkVerdict"] != "allow" {
		t.Errorf("link verdict entries: %v", verdicts)
	}
	if g := h.link().generation(); g != 1 {
		t.Errorf("generation %d, want 1: nothing failed", g)
	}
}

// Each hazard fails the ask into the failure verdict (deny here, with
// gate_error as decider, or defer), never allows, and the next ask is
// served by a fresh process.
func TestHazardsFailClosedAndRestart(t *testing.T) {
	cases := []struct {
		value string
		cause error
	}{
		{"crash", chain.ErrUnavailable},
		{"hang", chain.ErrTimeout},
		{"panic", chain.ErrUnavailable},
		{"panic-handler", chain.ErrUnavailable},
		{"invalid", authorizer.ErrInvalidVerdict},
		{"big", chain.ErrUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.value, func(t *testing.T) {
			s := spec("t")
			s.Timeout = 2 * time.Second
			if tc.value == "hang" {
				s.Timeout = 500 * time.Millisecond
			}
			h := load(t, Options{}, s)
			start := time.Now()
			d, ok := h.ask(tc.value)
			elapsed := time.Since(start)
			wantNoAllow(t, d, ok)
			if !ok || d.State != decision.StateDeniedWithReason {
				t.Fatalf("got %+v %v, want the failure policy's denial", d, ok)
			}
			if ge, isGE := d.DecidedBy.(provenance.GateError); !isGE || !strings.Contains(ge.Reason, `authorizer "t"`) {
				t.Errorf("decidedBy = %#v, want gate_error naming the link", d.DecidedBy)
			}
			if elapsed > 3*time.Second {
				t.Errorf("the failure took %v", elapsed)
			}
			// the process that failed was retired; a fresh one serves (the
			// wait for its start is not part of an ask's deadline here, so
			// a loaded machine cannot fail the test)
			if _, err := h.link().acquire(withTimeout(t, 20*time.Second)); err != nil {
				t.Fatalf("restart: %v", err)
			}
			d, ok = h.ask("allow")
			if !ok || !d.Approved() {
				t.Fatalf("after %s: %+v %v, want a restarted plugin to allow", tc.value, d, ok)
			}
			if g := h.link().generation(); g != 2 {
				t.Errorf("generation %d, want 2", g)
			}
			if _, err := h.link().Authorize(t.Context(), authorizer.Evidence{Value: tc.value}); !errors.Is(err, tc.cause) {
				t.Errorf("error %v, want %v", err, tc.cause)
			}
			e := h.entries(reviewlog.LinkVerdict)[0]
			if e["verdict"] != "deny" || e["failure"] == nil || e["error"] == nil {
				t.Errorf("review entry %v", e)
			}
		})
	}
}

func TestFailureDefers(t *testing.T) {
	s := spec("t")
	s.OnFailure = rules.LinkFailDefer
	h := load(t, Options{}, s)
	if d, ok := h.ask("crash"); ok {
		t.Fatalf("crash with onFailure defer decided %+v", d)
	}
	if d, ok := h.ask("allow"); !ok || !d.Approved() {
		t.Fatalf("restart: %+v %v", d, ok)
	}
}

// A plugin error is the plugin's answer that it cannot judge: the failure
// verdict applies, and the process, which works, is kept.
func TestPluginErrorKeepsProcess(t *testing.T) {
	h := load(t, Options{}, spec("t"))
	d, ok := h.ask("error")
	wantNoAllow(t, d, ok)
	if !ok {
		t.Fatal("error: not decided, want the failure denial")
	}
	if d, ok := h.ask("allow"); !ok || !d.Approved() {
		t.Fatalf("%+v %v", d, ok)
	}
	if g := h.link().generation(); g != 1 {
		t.Errorf("generation %d, want 1", g)
	}
}

func TestGarbageOnStdoutBeforeHandshake(t *testing.T) {
	h := load(t, Options{StartTimeout: 5 * time.Second}, spec("t", "--stdout-garbage"))
	var le *LinkError
	if len(h.errs) != 1 || !errors.As(h.errs[0], &le) || le.Disabled || !errors.Is(le, chain.ErrUnavailable) {
		t.Fatalf("load errors %v, want one start failure", h.errs)
	}
	if !strings.Contains(le.Error(), "Unrecognized remote plugin message") {
		t.Errorf("error %q does not say what went wrong", le)
	}
	d, ok := h.ask("allow")
	wantNoAllow(t, d, ok)
	if !ok {
		t.Fatal("not decided, want the failure denial")
	}
}

// A plugin that prints {"@message": 1} panics a go-plugin v1.8.0 host
// that lets go-plugin parse its stderr. Here the broker lives on, the
// plugin works, and the lines reach the diagnostic log as text.
func TestHostileStderr(t *testing.T) {
	h := load(t, Options{}, spec("t", "--stderr-hostile"))
	if len(h.errs) > 0 {
		t.Fatal(h.errs)
	}
	for range 3 {
		if d, ok := h.ask("stderr"); !ok || !d.Approved() {
			t.Fatalf("%+v %v", d, ok)
		}
	}
	if !strings.Contains(h.diag.String(), `{\"@message\": 1, \"@level\": \"info\"}`) {
		t.Errorf("hostile line not logged as text:\n%s", h.diag)
	}
	if g := h.link().generation(); g != 1 {
		t.Errorf("generation %d, want 1", g)
	}
}

func TestOutputFloodIsCapped(t *testing.T) {
	s := spec("t")
	s.Timeout = 20 * time.Second
	h := load(t, Options{}, s)
	if d, ok := h.ask("flood"); !ok || !d.Approved() {
		t.Fatalf("%+v %v", d, ok)
	}
	if n := strings.Count(h.diag.String(), "\n"); n > 1000 {
		t.Errorf("%d diagnostic lines for a flood, want the rate cap to hold", n)
	}
	if !strings.Contains(h.diag.String(), "lines dropped") && !strings.Contains(h.diag.String(), `"truncated":true`) {
		t.Errorf("no sign of capping in the diagnostic log")
	}
}

func TestChecksumMismatchAndMissingBinaryDisable(t *testing.T) {
	bad := spec("badsum")
	bad.SHA256 = strings.Repeat("0", 64)
	missing := spec("missing")
	missing.Path = filepath.Join(t.TempDir(), "no-such-plugin")
	writable := spec("writable")
	writable.Path = filepath.Join(t.TempDir(), "testauthz")
	copyFile(t, testauthz, writable.Path, 0o777)
	deferring := spec("deferring")
	deferring.SHA256 = strings.Repeat("1", 64)
	deferring.OnFailure = rules.LinkFailDefer

	h := load(t, Options{}, deferring, bad, missing, writable)
	if len(h.errs) != 4 {
		t.Fatalf("load errors %v, want 4", h.errs)
	}
	for i, want := range []error{ErrChecksum, ErrChecksum, ErrBinary, ErrBinary} {
		var le *LinkError
		if !errors.As(h.errs[i], &le) || !le.Disabled || !errors.Is(le, want) {
			t.Errorf("error %d = %v, want a disabled link wrapping %v", i, h.errs[i], want)
		}
	}
	if n := len(h.entries(reviewlog.LinkDisabled)); n != 4 {
		t.Errorf("%d authorizer_link.disabled entries, want 4", n)
	}
	// deferring is skipped; badsum denies by its failure policy.
	d, ok := h.ask("allow")
	wantNoAllow(t, d, ok)
	if !ok || !strings.Contains(d.DenialReason, `authorizer "badsum" is disabled`) {
		t.Fatalf("%+v %v", d, ok)
	}
}

func copyFile(t *testing.T, from, to string, perm os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(to, perm); err != nil {
		t.Fatal(err)
	}
}

// The binary is hashed afresh before every start: replacing it after load
// makes the restart fail, never run the new file.
func TestChecksumCheckedOnEveryStart(t *testing.T) {
	s := spec("t")
	s.Path = filepath.Join(t.TempDir(), "testauthz")
	copyFile(t, testauthz, s.Path, 0o755)
	h := load(t, Options{}, s)
	if len(h.errs) > 0 {
		t.Fatal(h.errs)
	}
	// Replace the binary (a new inode with other content) and crash it.
	replacement := s.Path + ".new"
	copyFile(t, testauthz, replacement, 0o755)
	f, err := os.OpenFile(replacement, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("tampered")
	f.Close()
	if err := os.Rename(replacement, s.Path); err != nil {
		t.Fatal(err)
	}
	h.ask("crash")
	d, ok := h.ask("allow")
	wantNoAllow(t, d, ok)
	_, err = h.link().Authorize(t.Context(), authorizer.Evidence{Value: "allow"})
	if !errors.Is(err, chain.ErrUnavailable) {
		t.Errorf("after tampering: %v", err)
	}
	if !strings.Contains(h.diag.String(), "checksum mismatch") {
		t.Errorf("diagnostic log does not report the mismatch:\n%s", h.diag)
	}
}

func TestEnvironmentNotLeaked(t *testing.T) {
	t.Setenv("COURIER_TEST_SECRET", "hunter2")
	h := load(t, Options{}, spec("t"))
	v, err := h.link().Authorize(t.Context(), authorizer.Evidence{Value: "env"})
	if err != nil {
		t.Fatal(err)
	}
	d := decision.Decision{DenialReason: v.Reason}
	var env []string
	if err := json.Unmarshal([]byte(d.DenialReason), &env); err != nil {
		t.Fatalf("env reason %q: %v", d.DenialReason, err)
	}
	allowed := map[string]bool{"PATH": true, "TMPDIR": true, "COURIER_AUTHORIZER_PLUGIN": true}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.Contains(v, "hunter2") || !(allowed[k] || strings.HasPrefix(k, "PLUGIN_")) {
			t.Errorf("plugin sees %s", kv)
		}
		if k == "PATH" && v != "/usr/local/bin:/usr/bin:/bin" {
			t.Errorf("PATH=%s", v)
		}
	}
	d, _ = h.ask("proc")
	var proc struct {
		PID   int
		Cwd   string
		Stdin string
	}
	if err := json.Unmarshal([]byte(d.DenialReason), &proc); err != nil {
		t.Fatalf("proc reason %q: %v", d.DenialReason, err)
	}
	if proc.Cwd != "/" || proc.Stdin != "eof" {
		t.Errorf("plugin runs in %q with stdin %q, want / and an empty stdin", proc.Cwd, proc.Stdin)
	}
}

// Without the disclosure grant a link never sees requesterCwd or the
// principal; with it, it sees exactly what was granted.
func TestDisclosureThroughThePlugin(t *testing.T) {
	plain := spec("plain")
	cwdOnly := spec("cwd")
	cwdOnly.DiscloseCwd = true
	h := load(t, Options{}, plain, cwdOnly)
	seen := func(i int) map[string]any {
		v, err := h.member(i).Authorize(t.Context(), authorizer.Project(request("bash", "evidence"), h.members[i].Disclose))
		if err != nil || v.Kind != authorizer.Deny {
			t.Fatalf("%v %v", v, err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(v.Reason), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	p := seen(0)
	if p["RequesterCwd"] != nil || p["Principal"] != nil || strings.Contains(mustJSON(t, p), "/work/child") {
		t.Errorf("undisclosed link saw %v", p)
	}
	if p["Access"] == nil || p["Forwarding"] == nil {
		t.Errorf("child-fixed facts missing: %v", p)
	}
	c := seen(1)
	if c["RequesterCwd"] != "/work/child" || c["Principal"] != nil {
		t.Errorf("cwd-only link saw cwd %v principal %v", c["RequesterCwd"], c["Principal"])
	}
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// N concurrent failures of one process cause one restart.
func TestConcurrentFailuresRestartOnce(t *testing.T) {
	s := spec("t")
	// Long enough that all eight calls are in flight on generation 1 before
	// the first deadline, even on a loaded CI machine.
	s.Timeout = time.Second
	h := load(t, Options{}, s)
	link := h.link()
	var (
		wg       sync.WaitGroup
		timeouts atomic.Int32
	)
	for range 8 {
		wg.Go(func() {
			// The first call to time out retires the process; a sibling
			// still in flight on it then sees the connection drop before
			// its own deadline, which is a failure of the same process
			// (unavailable), not a second timeout. Either way, no verdict.
			_, err := link.Authorize(t.Context(), authorizer.Evidence{Value: "hang"})
			switch {
			case errors.Is(err, chain.ErrTimeout):
				timeouts.Add(1)
			case errors.Is(err, chain.ErrUnavailable):
			default:
				t.Errorf("hang: %v", err)
			}
		})
	}
	wg.Wait()
	if timeouts.Load() == 0 {
		t.Errorf("no call reported the timeout that retired the process")
	}
	if g := link.generation(); g != 1 {
		t.Fatalf("generation %d after the failures, want 1 (no start yet)", g)
	}
	if _, err := link.acquire(withTimeout(t, 20*time.Second)); err != nil {
		t.Fatalf("restart: %v", err)
	}
	if d, ok := h.ask("allow"); !ok || !d.Approved() {
		t.Fatalf("%+v %v", d, ok)
	}
	if g := link.generation(); g != 2 {
		t.Errorf("generation %d, want 2: one restart for 8 failures", g)
	}
}

// Consecutive failures back off: during the backoff an ask fails at once
// without starting anything.
func TestRestartBackoff(t *testing.T) {
	h := load(t, Options{BackoffBase: time.Minute}, spec("t"))
	link := h.link()
	h.ask("crash") // failure 1: the next start is immediate
	h.ask("crash") // generation 2 crashes too: back off a minute
	start := time.Now()
	_, err := link.Authorize(t.Context(), authorizer.Evidence{Value: "allow"})
	if !errors.Is(err, chain.ErrUnavailable) || !strings.Contains(err.Error(), "backing off") {
		t.Fatalf("during backoff: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("a backing-off link made the ask wait %v", time.Since(start))
	}
	if g := link.generation(); g != 2 {
		t.Errorf("generation %d, want 2", g)
	}
}

func TestSlowStart(t *testing.T) {
	t.Run("past the start timeout", func(t *testing.T) {
		t.Parallel()
		h := load(t, Options{StartTimeout: 300 * time.Millisecond}, spec("t", "--start-delay", "3s"))
		if len(h.errs) != 1 || !strings.Contains(h.errs[0].Error(), "timeout while waiting for plugin to start") {
			t.Fatalf("load errors %v", h.errs)
		}
		d, ok := h.ask("allow")
		wantNoAllow(t, d, ok)
	})
	t.Run("an ask waits for the start within its deadline", func(t *testing.T) {
		t.Parallel()
		s := spec("t", "--start-delay", "300ms")
		link := newSupervised(s, Options{})
		t.Cleanup(func() { link.Close() })
		v, err := link.Authorize(t.Context(), authorizer.Evidence{Value: "allow"})
		if err != nil || v.Kind != authorizer.Allow {
			t.Fatalf("%v %v", v, err)
		}
	})
	t.Run("an ask shorter than the start times out; the start goes on", func(t *testing.T) {
		t.Parallel()
		s := spec("t", "--start-delay", "500ms")
		s.Timeout = 100 * time.Millisecond
		link := newSupervised(s, Options{})
		t.Cleanup(func() { link.Close() })
		if _, err := link.Authorize(t.Context(), authorizer.Evidence{Value: "allow"}); !errors.Is(err, chain.ErrTimeout) {
			t.Fatalf("first ask: %v, want a timeout", err)
		}
		// wait for the start in progress, then ask again: same process
		if _, err := link.acquire(withTimeout(t, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if v, err := link.Authorize(t.Context(), authorizer.Evidence{Value: "allow"}); err != nil || v.Kind != authorizer.Allow {
			t.Fatalf("%v %v", v, err)
		}
		if g := link.generation(); g != 1 {
			t.Errorf("generation %d, want 1", g)
		}
	})
}

// pidExited waits for process pid to exit, through a pidfd.
func pidExited(t *testing.T, pid int, within time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(within.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
}

// pluginPID asks the link's process for its pid.
func pluginPID(t *testing.T, link chain.Link) int {
	t.Helper()
	v, err := link.Authorize(t.Context(), authorizer.Evidence{Value: "proc"})
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ PID int }
	if err := json.Unmarshal([]byte(v.Reason), &p); err != nil || p.PID == 0 {
		t.Fatalf("proc reason %q: %v", v.Reason, err)
	}
	return p.PID
}

func TestPluginsDieWithTheBroker(t *testing.T) {
	host := exec.Command(testHost, testauthz, testauthzSum)
	stdout, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	host.Stderr = os.Stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		host.Process.Kill()
		t.Fatalf("host output: %v", err)
	}
	var p struct{ PID int }
	if err := json.Unmarshal([]byte(line), &p); err != nil || p.PID == 0 {
		host.Process.Kill()
		t.Fatalf("host said %q: %v", line, err)
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	host.Wait()
	if !pidExited(t, p.PID, 10*time.Second) {
		syscall.Kill(p.PID, syscall.SIGKILL)
		t.Fatalf("plugin %d outlived its SIGKILLed broker", p.PID)
	}
}

func TestCloseKillsPluginsAndLeaksNoGoroutines(t *testing.T) {
	before := countGoroutines()
	members, errs := loadMembers(t.Context(), []rules.AuthorizerLink{spec("a"), spec("b")}, nil, Options{})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c := chain.New(nil, members)
	pids := []int{pluginPID(t, members[0].Link), pluginPID(t, members[1].Link)}
	// leave a failed process being killed, and a hung call, at Close
	members[0].Link.Authorize(t.Context(), authorizer.Evidence{Value: "crash"})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !pidExited(t, pid, 5*time.Second) {
			t.Errorf("plugin %d survived Close", pid)
		}
	}
	if _, err := members[1].Link.Authorize(t.Context(), authorizer.Evidence{Value: "allow"}); !errors.Is(err, chain.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	// gRPC's and go-plugin's goroutines wind down asynchronously.
	deadline := time.Now().Add(5 * time.Second)
	for countGoroutines() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if after := countGoroutines(); after > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines before Load, %d after Close:\n%s", before, after, buf[:runtime.Stack(buf, true)])
	}
}

func countGoroutines() int { return runtime.NumGoroutine() }
