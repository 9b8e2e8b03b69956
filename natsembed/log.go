package natsembed

import (
	"fmt"
	"io"
	"sync"
)

// recorder is the server's logger: it keeps the first fatal and the last
// error line, for Start's error, and writes every line to w when set.
type recorder struct {
	mu       sync.Mutex
	w        io.Writer
	firstBad string
	lastErr  string
}

func (l *recorder) line(level, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch level {
	case "fatal":
		if l.firstBad == "" {
			l.firstBad = msg
		}
	case "error":
		l.lastErr = msg
	}
	if l.w != nil {
		fmt.Fprintf(l.w, "nats-server %s: %s\n", level, msg)
	}
}

// fatal is what made the server stop, or its last error, or "".
func (l *recorder) fatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.firstBad != "" {
		return l.firstBad
	}
	return l.lastErr
}

func (l *recorder) hasFatal() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstBad != ""
}

func (l *recorder) Noticef(format string, v ...any) { l.line("notice", format, v...) }
func (l *recorder) Warnf(format string, v ...any)   { l.line("warn", format, v...) }
func (l *recorder) Fatalf(format string, v ...any)  { l.line("fatal", format, v...) }
func (l *recorder) Errorf(format string, v ...any)  { l.line("error", format, v...) }
func (l *recorder) Debugf(format string, v ...any)  { l.line("debug", format, v...) }
func (l *recorder) Tracef(format string, v ...any)  { l.line("trace", format, v...) }
