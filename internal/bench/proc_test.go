package bench

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatTicks(t *testing.T) {
	// Field 2 may hold spaces and parentheses; utime (14) is 1234 and
	// stime (15) 56.
	line := "4242 (we ird) (cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 8 0 100 1000 200 18446744073709551615\n"
	got, err := parseStatTicks([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if got != 1290 {
		t.Errorf("ticks = %d, want 1290", got)
	}
	for _, bad := range []string{"", "4242 no parens", "4242 (x) S 1 2"} {
		if _, err := parseStatTicks([]byte(bad)); err == nil {
			t.Errorf("parseStatTicks(%q) succeeded", bad)
		}
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tbroker\nVmPeak:\t  999 kB\nVmHWM:\t   30000 kB\nVmRSS:\t   20480 kB\nThreads:\t8\n"
	got, err := parseStatus(strings.NewReader(status))
	if err != nil {
		t.Fatal(err)
	}
	if got != (Memory{RSS: 20480, HWM: 30000}) {
		t.Errorf("memory = %+v", got)
	}
	if _, err := parseStatus(strings.NewReader("Name:\tzombie\n")); err == nil {
		t.Error("a status without VmRSS parsed")
	}
}

func TestReadOwnProcess(t *testing.T) {
	before, err := ReadCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn a little CPU so that the schedstat figure must move.
	deadline := time.Now().Add(20 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = x * x
	}
	after, err := ReadCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	u := after.Since(before)
	if u.ExecUsed <= 0 || u.ExecPercent <= 0 {
		t.Errorf("CPU use over a busy loop = %+v, want some", u)
	}
	mem, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if mem.RSS <= 0 || mem.HWM < mem.RSS {
		t.Errorf("memory = %+v", mem)
	}
}

func TestCPUSinceWindow(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := CPUSample{Ticks: 10, Exec: 50 * time.Millisecond, At: t0}
	b := CPUSample{Ticks: 11, Exec: 60 * time.Millisecond, At: t0.Add(10 * time.Second)}
	u := b.Since(a)
	// One 10 ms tick in 10 s is 0.1 %; 10 ms of exec time likewise.
	if u.TicksUsed != 1 || u.ExecUsed != 10*time.Millisecond || !near(u.TicksPercent, 0.1) || !near(u.ExecPercent, 0.1) {
		t.Errorf("Since = %+v", u)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
