//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package prompt

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// tty is the controlling terminal, opened on its own: the prompt's mode
// and non-blocking reads then belong to this open file alone, never to
// the stdin the broker shares with its shell, and closing it ends a
// blocked read.
type tty struct {
	f     *os.File
	saved *unix.Termios
	winch chan os.Signal
}

func openTTY(stdin *os.File) (*tty, error) {
	if stdin == nil || !isTerminal(stdin) {
		return nil, fmt.Errorf("%w: standard input is not a terminal", ErrNoTerminal)
	}
	f, err := os.OpenFile("/dev/tty", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: opening the controlling terminal: %w", ErrNoTerminal, err)
	}
	saved, err := getTermios(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: /dev/tty: %w", ErrNoTerminal, err)
	}
	// Keys arrive one at a time and unechoed, but the terminal keeps its
	// output processing (a newline written to stderr still returns the
	// carriage) and its signals (Ctrl-C stops the broker as it always
	// does). Suspend is off: a stopped broker would leave its children
	// waiting and the terminal in this mode.
	mode := *saved
	mode.Lflag &^= unix.ICANON | unix.ECHO | unix.ECHONL | unix.IEXTEN
	mode.Iflag &^= unix.ICRNL | unix.INLCR | unix.IGNCR | unix.IXON | unix.ISTRIP
	mode.Cc[unix.VMIN] = 1
	mode.Cc[unix.VTIME] = 0
	mode.Cc[unix.VSUSP] = posixVDisable
	if err := setTermios(f, &mode); err != nil {
		f.Close()
		return nil, fmt.Errorf("prompt: setting the terminal's mode: %w", err)
	}
	t := &tty{f: f, saved: saved, winch: make(chan os.Signal, 1)}
	signal.Notify(t.winch, syscall.SIGWINCH)
	return t, nil
}

func isTerminal(f *os.File) bool {
	_, err := getTermios(f)
	return err == nil
}

// getTermios and setTermios go through the file's raw connection, which
// leaves its blocking mode alone (File.Fd would change it).
func getTermios(f *os.File) (*unix.Termios, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var t *unix.Termios
	var ioctlErr error
	if err := rc.Control(func(fd uintptr) { t, ioctlErr = unix.IoctlGetTermios(int(fd), ioctlGetTermios) }); err != nil {
		return nil, err
	}
	return t, ioctlErr
}

func setTermios(f *os.File, t *unix.Termios) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioctlErr error
	if err := rc.Control(func(fd uintptr) { ioctlErr = unix.IoctlSetTermios(int(fd), ioctlSetTermios, t) }); err != nil {
		return err
	}
	return ioctlErr
}

func (t *tty) Read(b []byte) (int, error)  { return t.f.Read(b) }
func (t *tty) Write(b []byte) (int, error) { return t.f.Write(b) }

func (t *tty) size() (int, int, error) {
	rc, err := t.f.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var ws *unix.Winsize
	var ioctlErr error
	if err := rc.Control(func(fd uintptr) { ws, ioctlErr = unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ) }); err != nil {
		return 0, 0, err
	}
	if ioctlErr != nil {
		return 0, 0, ioctlErr
	}
	return int(ws.Col), int(ws.Row), nil
}

func (t *tty) resized() <-chan os.Signal { return t.winch }

func (t *tty) close() error {
	signal.Stop(t.winch)
	err := setTermios(t.f, t.saved)
	return errors.Join(err, t.f.Close())
}
