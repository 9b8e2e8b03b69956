package mailbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/wire"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a short-lived process: %v", err)
	}
	return cmd.Process.Pid
}

func TestJudgeHeartbeat(t *testing.T) {
	now := time.UnixMilli(1_757_000_000_000)
	alive := func(int) bool { return true }
	dead := func(int) bool { return false }
	tests := []struct {
		name      string
		updatedAt int64
		exists    func(int) bool
		want      ServingState
	}{
		{"fresh", now.UnixMilli() - 1000, alive, ServingAlive},
		{"just under stale", now.UnixMilli() - 4999, alive, ServingAlive},
		{"exactly stale", now.UnixMilli() - 5000, alive, ServingStale},
		{"long stale", now.UnixMilli() - 3_600_000, alive, ServingStale},
		{"from the future", now.UnixMilli() + 60_000, alive, ServingAlive},
		{"minimum int64 does not overflow", math.MinInt64, alive, ServingStale},
		{"dead pid, fresh", now.UnixMilli(), dead, ServingDeadPID},
		{"dead pid wins over stale", now.UnixMilli() - 10_000, dead, ServingDeadPID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := wire.Heartbeat{SessionID: "s", PID: 4242, UpdatedAt: tt.updatedAt}
			if got := judgeHeartbeat(h, now, tt.exists); got != tt.want {
				t.Errorf("judgeHeartbeat = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestProcessExists(t *testing.T) {
	tests := []struct {
		name string
		pid  int
		want bool
	}{
		{"this process", os.Getpid(), true},
		{"init, signalable or EPERM", 1, true},
		{"reaped child", deadPID(t), false},
		{"zero is the process group", 0, false},
		{"negative is a process group", -1, false},
		{"truncates to -1 as a pid_t", 1<<32 - 1, false},
		{"beyond pid_t", math.MaxInt32 + 1, false},
	}
	for _, tt := range tests {
		if got := processExists(tt.pid); got != tt.want {
			t.Errorf("%s: processExists(%d) = %v, want %v", tt.name, tt.pid, got, tt.want)
		}
	}
}

func writeHeartbeat(t *testing.T, l Layout, session, body string) {
	t.Helper()
	path, err := l.HeartbeatPath(session)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCheckServing(t *testing.T) {
	now := time.UnixMilli(1_757_000_000_000)
	ms := now.UnixMilli()
	me := os.Getpid()
	gone := deadPID(t)
	record := func(pid int, updatedAt int64) string {
		return fmt.Sprintf(`{"sessionId":"s","pid":%d,"updatedAt":%d}`, pid, updatedAt)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, l Layout)
		want  ServingState
	}{
		{"no record (pi 20.x parent)", func(t *testing.T, l Layout) {}, ServingAbsent},
		{"alive", func(t *testing.T, l Layout) { writeHeartbeat(t, l, "s", record(me, ms-200)) }, ServingAlive},
		{"stale", func(t *testing.T, l Layout) { writeHeartbeat(t, l, "s", record(me, ms-5000)) }, ServingStale},
		{"dead pid", func(t *testing.T, l Layout) { writeHeartbeat(t, l, "s", record(gone, ms)) }, ServingDeadPID},
		{"garbage", func(t *testing.T, l Layout) { writeHeartbeat(t, l, "s", "{not json") }, ServingAbsent},
		{"pid zero", func(t *testing.T, l Layout) { writeHeartbeat(t, l, "s", record(0, ms)) }, ServingAbsent},
		{"negative pid", func(t *testing.T, l Layout) { writeHeartbeat(t, l, "s", record(-1, ms)) }, ServingAbsent},
		{"pid beyond pid_t", func(t *testing.T, l Layout) { writeHeartbeat(t, l, "s", record(1<<32-1, ms)) }, ServingAbsent},
		{"empty session id", func(t *testing.T, l Layout) {
			writeHeartbeat(t, l, "s", fmt.Sprintf(`{"sessionId":"","pid":%d,"updatedAt":%d}`, me, ms))
		}, ServingAbsent},
		{"symlink to a live record", func(t *testing.T, l Layout) {
			writeHeartbeat(t, l, "other", record(me, ms))
			target, _ := l.HeartbeatPath("other")
			link, _ := l.HeartbeatPath("s")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
		}, ServingAbsent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Layout{Root: t.TempDir()}
			tt.setup(t, l)
			got, err := l.CheckServing("s", now)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tt.want {
				t.Errorf("CheckServing = %v (%v), want %v", got.State, got.Err, tt.want)
			}
			if got.State == ServingAbsent && got.Err == nil {
				t.Error("absent without a reason")
			}
		})
	}
	if _, err := (Layout{Root: t.TempDir()}).CheckServing("unknown", now); !errors.Is(err, ErrInvalidSessionID) {
		t.Errorf("CheckServing(unknown) = %v, want ErrInvalidSessionID", err)
	}
}

func TestServingStateString(t *testing.T) {
	for s, want := range map[ServingState]string{ServingAbsent: "absent", ServingAlive: "alive", ServingDeadPID: "dead_pid", ServingStale: "stale"} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(s), got, want)
		}
	}
}

func TestHeartbeatPublisher(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	clock := time.UnixMilli(1_757_000_000_000)
	p := &HeartbeatPublisher{Layout: l, Session: " parent/1 ", Now: func() time.Time { return clock }}
	if err := p.Publish(); err != nil {
		t.Fatal(err)
	}
	path, _ := l.HeartbeatPath("parent/1")
	assertMode(t, path, 0o600)
	assertMode(t, l.ServingDir(), os.ModeDir|0o700)
	data, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := wire.DecodeHeartbeat(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := (wire.Heartbeat{SessionID: "parent/1", PID: os.Getpid(), UpdatedAt: clock.UnixMilli()}); h != want {
		t.Errorf("record %+v, want %+v", h, want)
	}
	if got, _ := l.CheckServing("parent/1", clock.Add(time.Second)); got.State != ServingAlive {
		t.Errorf("after Publish: %v (%v)", got.State, got.Err)
	}
	if got, _ := l.CheckServing("parent/1", clock.Add(HeartbeatStaleAfter)); got.State != ServingStale {
		t.Errorf("5 s later: %v", got.State)
	}

	// A successor broker's record is not ours to withdraw.
	successor := &HeartbeatPublisher{Layout: l, Session: "parent/1", PID: 1, Now: p.Now}
	if err := successor.Publish(); err != nil {
		t.Fatal(err)
	}
	if err := p.Withdraw(); err != nil {
		t.Fatal(err)
	}
	if !exists(t, path) {
		t.Fatal("Withdraw removed another pid's record")
	}
	if err := successor.Withdraw(); err != nil {
		t.Fatal(err)
	}
	if exists(t, path) {
		t.Fatal("Withdraw left our own record")
	}
	if err := successor.Withdraw(); err != nil {
		t.Fatalf("second Withdraw: %v", err)
	}
}

func TestHeartbeatPublisherRun(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	path, _ := l.HeartbeatPath("s")
	fw, err := WatchFile(t.Context(), path, WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()

	ctx, cancel := context.WithCancel(t.Context())
	p := &HeartbeatPublisher{Layout: l, Session: "s"}
	errs := make(chan error, 1)
	go func() { errs <- p.Run(ctx, time.Hour, func(err error) { t.Errorf("publish: %v", err) }) }()
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	if err := fw.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-errs:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if exists(t, path) {
		t.Error("record still there after Run returned")
	}
}

func TestSweepServing(t *testing.T) {
	l := Layout{Root: t.TempDir()}
	if n, err := l.SweepServing(); n != 0 || err != nil {
		t.Fatalf("no serving dir: %d, %v", n, err)
	}
	ms := time.Now().UnixMilli()
	writeHeartbeat(t, l, "alive", fmt.Sprintf(`{"sessionId":"alive","pid":%d,"updatedAt":%d}`, os.Getpid(), ms))
	writeHeartbeat(t, l, "stale", fmt.Sprintf(`{"sessionId":"stale","pid":%d,"updatedAt":%d}`, os.Getpid(), ms-3_600_000))
	writeHeartbeat(t, l, "dead", fmt.Sprintf(`{"sessionId":"dead","pid":%d,"updatedAt":%d}`, deadPID(t), ms))
	writeHeartbeat(t, l, "garbage", `[]`)
	n, err := l.SweepServing()
	if err != nil || n != 2 {
		t.Fatalf("SweepServing = %d, %v; want 2", n, err)
	}
	for session, want := range map[string]bool{"alive": true, "stale": true, "dead": false, "garbage": false} {
		path, _ := l.HeartbeatPath(session)
		if got := exists(t, path); got != want {
			t.Errorf("%s record exists = %v, want %v", session, got, want)
		}
	}
}

// FuzzCheckServing feeds arbitrary record bytes through the judge: it
// must never panic, and a record it does not call absent must carry a pid
// that kill(2) reads as exactly one process.
func FuzzCheckServing(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","pid":1,"updatedAt":0}`,
		`{"sessionId":"s","pid":4294967295,"updatedAt":0}`,
		`{"sessionId":"s","pid":1e300,"updatedAt":1e300}`,
		`{"sessionId":"s","pid":-1,"updatedAt":0}`,
		`{"sessionId":"s","pid":1.5,"updatedAt":0}`,
		`{"sessionId":"","pid":1,"updatedAt":0}`,
		`{"sessionId":"s","pid":1,"updatedAt":-9223372036854775808}`,
		`null`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	l := Layout{Root: f.TempDir()}
	path, _ := l.HeartbeatPath("s")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := l.CheckServing("s", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got.State != ServingAbsent && (got.Heartbeat.PID <= 0 || got.Heartbeat.PID > math.MaxInt32) {
			t.Fatalf("state %v with pid %d", got.State, got.Heartbeat.PID)
		}
	})
}
