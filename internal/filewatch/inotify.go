package filewatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// What a watch asks the kernel for.
const (
	// arrivalEvents: a file arriving, by a rename in (courier stages in
	// tmp/, pi renames its own temporary file) or a create, and the
	// directory's own removal or rename. A Shared asks for no more, so a
	// waiter's deletion of its own file wakes nobody.
	arrivalEvents = inCreate | inMovedTo | inDeleteSelf | inMoveSelf | inOnlyDir
	// changeEvents adds writes in place, removals and renames away: a
	// Dir's owner must learn that a file it holds changed under it.
	changeEvents = arrivalEvents | inModify | inDelete | inMovedFrom
	// goneEvents say that a watch is no longer on the directory at its
	// path: removed, renamed away, unmounted, or dropped by the kernel.
	goneEvents = inIgnored | inDeleteSelf | inMoveSelf | inUnmount
)

// readBufferSize is room for a burst: an event is 16 bytes plus a name
// padded to 16.
const readBufferSize = 64 << 10

// Inotify is one inotify(7) instance, non-blocking and read through the
// runtime's poller: a read waits without a thread, honours a deadline, and
// Close wakes it.
type Inotify struct {
	file *os.File
	// conn reaches the descriptor for inotify_add_watch and rm_watch;
	// Control holds it open for the call, so a concurrent Close cannot let
	// the number be reused under it.
	conn syscall.RawConn
}

// OpenInotify creates an instance. It fails where inotify cannot be had:
// at the per-user instance limit (an error wrapping EMFILE), or on a
// system without inotify (wrapping errors.ErrUnsupported).
func OpenInotify() (*Inotify, error) {
	fd, err := inotifyInit()
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	file := os.NewFile(uintptr(fd), "inotify")
	conn, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("inotify: %w", err)
	}
	return &Inotify{file: file, conn: conn}, nil
}

// Close releases the instance and every watch on it, and wakes a read
// waiting on it. It is idempotent.
func (in *Inotify) Close() error {
	if err := in.file.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("inotify: %w", err)
	}
	return nil
}

// addWatch puts a watch for mask on the directory at path and returns its
// descriptor; for a directory watched already, the kernel hands back the
// descriptor it has. An error wraps the errno (fs.ErrNotExist when nothing
// is at the path), or os.ErrClosed when the instance was closed.
func (in *Inotify) addWatch(path string, mask uint32) (int32, error) {
	var (
		wd  int
		err error
	)
	if cerr := in.conn.Control(func(fd uintptr) { wd, err = inotifyAddWatch(int(fd), path, mask) }); cerr != nil {
		return -1, &fs.PathError{Op: "inotify_add_watch", Path: path, Err: os.ErrClosed}
	}
	if err != nil {
		return -1, &fs.PathError{Op: "inotify_add_watch", Path: path, Err: err}
	}
	return int32(wd), nil
}

// rmWatch removes a watch the kernel still has; failure only means it had
// gone already.
func (in *Inotify) rmWatch(wd int32) {
	_ = in.conn.Control(func(fd uintptr) { _ = inotifyRmWatch(int(fd), uint32(wd)) })
}

func (in *Inotify) read(buf []byte) (int, error) { return in.file.Read(buf) }

func (in *Inotify) setReadDeadline(t time.Time) { _ = in.file.SetReadDeadline(t) }

// records iterates over the inotify_event records of one read.
type records struct{ buf []byte }

// next returns the next record, its name without the kernel's NUL
// padding; false at the end.
func (r *records) next() (wd int32, mask uint32, name []byte, ok bool) {
	const header = sizeofInotifyEvent
	if len(r.buf) < header {
		return 0, 0, nil, false
	}
	wd = int32(binary.NativeEndian.Uint32(r.buf))
	mask = binary.NativeEndian.Uint32(r.buf[4:])
	nameLen := int(binary.NativeEndian.Uint32(r.buf[12:]))
	name = r.buf[header:min(header+nameLen, len(r.buf))]
	r.buf = r.buf[min(header+nameLen, len(r.buf)):]
	for i, c := range name {
		if c == 0 {
			name = name[:i]
			break
		}
	}
	return wd, mask, name, true
}

// opOf is what an event's mask tells of the name it carries.
func opOf(mask uint32) Op {
	var op Op
	if mask&(inCreate|inMovedTo) != 0 {
		op |= Create
	}
	if mask&inModify != 0 {
		op |= Write
	}
	if mask&inDelete != 0 {
		op |= Remove
	}
	if mask&inMovedFrom != 0 {
		op |= Rename
	}
	return op
}
