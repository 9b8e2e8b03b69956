package bench

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// pty is a pseudo-terminal for a `broker serve --terminal tty`, whose
// prompt needs a controlling terminal. The driver is the terminal
// emulator nobody looks at: it drains what the prompt draws (a terminal
// that is never read fills its buffer, and the prompt's writes would then
// block) and keeps the tail for diagnostics.
type pty struct {
	master, slave *os.File
	drained       chan struct{}

	mu   sync.Mutex
	tail []byte
}

const ptyTailMax = 4 << 10

// openPTY allocates a pseudo-terminal of 120×40 and starts draining it.
func openPTY() (*pty, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening a pseudo-terminal: %w", err)
	}
	n, err := ptyUnlock(m)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("preparing the pseudo-terminal: %w", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("opening the pseudo-terminal's slave: %w", err)
	}
	if err := setWinsize(s, 40, 120); err != nil {
		m.Close()
		s.Close()
		return nil, fmt.Errorf("sizing the pseudo-terminal: %w", err)
	}
	p := &pty{master: m, slave: s, drained: make(chan struct{})}
	go p.drain()
	return p, nil
}

// ptyUnlock unlocks the slave of master and returns its number, going
// through the raw connection so that the master stays non-blocking (and
// so closable while a read waits).
func ptyUnlock(m *os.File) (int, error) {
	rc, err := m.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		if ioErr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ioErr != nil {
			return
		}
		n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
	})
	if err != nil {
		return 0, err
	}
	return n, ioErr
}

func setWinsize(f *os.File, rows, cols uint16) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
	if err != nil {
		return err
	}
	return ioErr
}

func (p *pty) drain() {
	defer close(p.drained)
	buf := make([]byte, 32<<10)
	for {
		n, err := p.master.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.tail = append(p.tail, buf[:n]...)
			if len(p.tail) > ptyTailMax {
				p.tail = append(p.tail[:0], p.tail[len(p.tail)-ptyTailMax:]...)
			}
			p.mu.Unlock()
		}
		if err != nil {
			// EIO once the last slave descriptor closes, or
			// ErrClosed from close: either way the terminal is done.
			return
		}
	}
}

// screenTail is the last few KiB the prompt drew.
func (p *pty) screenTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return string(p.tail)
}

// closeSlave drops the driver's copy of the slave once the broker holds
// its own, so that the broker's exit ends the drain.
func (p *pty) closeSlave() {
	if p.slave != nil {
		p.slave.Close()
		p.slave = nil
	}
}

// close ends the drain and waits for it.
func (p *pty) close() {
	p.closeSlave()
	p.master.Close()
	<-p.drained
}
