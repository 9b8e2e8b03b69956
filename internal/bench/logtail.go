package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// logTail follows a broker's review log, counting lines that contain a
// marker. It reads only what was appended since the last look, so
// following a log of tens of thousands of lines stays cheap.
type logTail struct {
	path    string
	offset  int64
	partial []byte
}

// count returns how many new complete lines contain every one of marks.
func (t *logTail) count(marks ...string) (int, error) {
	f, err := os.Open(t.path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the review log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("reading the review log: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return 0, fmt.Errorf("reading the review log: %w", err)
	}
	t.offset += int64(len(data))
	data = append(t.partial, data...)
	n := 0
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if containsAll(data[:i], marks) {
			n++
		}
		data = data[i+1:]
	}
	t.partial = append([]byte(nil), data...)
	return n, nil
}

func containsAll(line []byte, marks []string) bool {
	for _, m := range marks {
		if !bytes.Contains(line, []byte(m)) {
			return false
		}
	}
	return true
}

// waitCount polls the log until want matching lines have appeared since
// the tail was created, or timeout passes.
func (t *logTail) waitCount(ctx context.Context, want int, timeout time.Duration, marks ...string) (int, error) {
	deadline := time.Now().Add(timeout)
	seen := 0
	for {
		n, err := t.count(marks...)
		if err != nil {
			return seen, err
		}
		seen += n
		if seen >= want {
			return seen, nil
		}
		if time.Now().After(deadline) {
			return seen, fmt.Errorf("%d of %d %q review entries after %s: %w", seen, want, marks, timeout, errTimeout)
		}
		select {
		case <-ctx.Done():
			return seen, context.Cause(ctx)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
