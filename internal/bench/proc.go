package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux architecture's user ABI (the kernel converts
// from its internal HZ), which is why it can be a constant here.
const clockTicks = 100

// CPUSample is one reading of a process's CPU time.
type CPUSample struct {
	// Ticks is utime+stime from /proc/<pid>/stat, in 1/100 s, summed
	// over all threads by the kernel.
	Ticks int64
	// Exec is the sum of the on-CPU time of every live thread from
	// /proc/<pid>/task/*/schedstat, in nanoseconds. It is the precise
	// figure (ticks are 10 ms, which over 10 s is 0.1 % of a core: the
	// very target); it misses threads that exited in between, which an
	// idle Go process does not do.
	Exec time.Duration
	// At is when the sample was taken.
	At time.Time
}

// ReadCPU samples pid's CPU time.
func ReadCPU(pid int) (CPUSample, error) {
	at := time.Now()
	ticks, err := readStatTicks(pid)
	if err != nil {
		return CPUSample{}, err
	}
	exec, err := readSchedExec(pid)
	if err != nil {
		return CPUSample{}, err
	}
	return CPUSample{Ticks: ticks, Exec: exec, At: at}, nil
}

// CPUUse is the CPU a process used between two samples.
type CPUUse struct {
	Wall time.Duration
	// TicksPercent is (utime+stime) over wall, in percent of one core.
	TicksPercent float64
	// ExecPercent is the schedstat on-CPU time over wall, in percent of
	// one core.
	ExecPercent float64
	// TicksUsed and ExecUsed are the raw differences.
	TicksUsed int64
	ExecUsed  time.Duration
}

// Since is the CPU used from earlier to s.
func (s CPUSample) Since(earlier CPUSample) CPUUse {
	wall := s.At.Sub(earlier.At)
	u := CPUUse{Wall: wall, TicksUsed: s.Ticks - earlier.Ticks, ExecUsed: s.Exec - earlier.Exec}
	if wall > 0 {
		u.TicksPercent = 100 * float64(u.TicksUsed) / clockTicks / wall.Seconds()
		u.ExecPercent = 100 * u.ExecUsed.Seconds() / wall.Seconds()
	}
	return u
}

// readStatTicks reads utime+stime (fields 14 and 15) of /proc/<pid>/stat.
func readStatTicks(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading cpu time: %w", err)
	}
	return parseStatTicks(data)
}

// parseStatTicks parses a /proc/<pid>/stat line. The command name (field
// 2) is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted from the last ')'.
func parseStatTicks(data []byte) (int64, error) {
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, errors.New("parsing /proc stat: no command name")
	}
	fields := strings.Fields(string(data[end+1:]))
	// fields[0] is field 3 (state); utime is field 14, stime field 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("parsing /proc stat: %d fields after the command name", len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("parsing /proc stat: %w", err)
	}
	return utime + stime, nil
}

// readSchedExec sums the first field of every thread's schedstat.
func readSchedExec(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("reading schedstat of %d: no tasks", pid)
	}
	var total int64
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited between the glob and the read
		}
		if err != nil {
			return 0, fmt.Errorf("reading schedstat: %w", err)
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return 0, fmt.Errorf("parsing %s: empty", t)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s: %w", t, err)
		}
		total += ns
	}
	return time.Duration(total), nil
}

// Memory is a process's resident memory, from /proc/<pid>/status.
type Memory struct {
	// RSS is VmRSS: resident now.
	RSS int64 `json:"vmrss_kib"`
	// HWM is VmHWM: the peak resident size.
	HWM int64 `json:"vmhwm_kib"`
}

// ReadMemory reads VmRSS and VmHWM of pid, in KiB.
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("reading memory: %w", err)
	}
	defer f.Close()
	return parseStatus(f)
}

func parseStatus(r io.Reader) (Memory, error) {
	var m Memory
	var found int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch key {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("parsing %s: %w", key, err)
		}
		*dst = v
		found++
	}
	if err := sc.Err(); err != nil {
		return Memory{}, fmt.Errorf("reading memory: %w", err)
	}
	if found != 2 {
		return Memory{}, errors.New("reading memory: VmRSS or VmHWM missing")
	}
	return m, nil
}
