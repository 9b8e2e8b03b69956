package mailbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// MaxFileSize caps every mailbox file a reader accepts. The largest real
// request (a prompt with its evidence) is a few KiB; the cap exists so that
// a hostile or runaway writer cannot make the broker allocate without bound.
const MaxFileSize = 1 << 20

// Reasons a mailbox file or directory is refused. An *UnsafeFileError
// wraps exactly one of them, so callers branch with errors.Is.
var (
	// ErrSymlink: a symbolic link, which could point anywhere (a secret,
	// /dev/zero, another session's inbox).
	ErrSymlink = errors.New("symbolic link")
	// ErrNotRegular: a FIFO, socket, device or directory where a file
	// was expected. Reading a FIFO would block the reader forever.
	ErrNotRegular = errors.New("not a regular file")
	// ErrNotDirectory: something other than a directory where the tree
	// needs one.
	ErrNotDirectory = errors.New("not a directory")
	// ErrTooLarge: more than MaxFileSize bytes.
	ErrTooLarge = errors.New("larger than the size cap")
	// ErrHardLinked: a second name for an inode, possibly one the writer
	// could not otherwise have shown us.
	ErrHardLinked = errors.New("hard-linked")
	// ErrWrongOwner: owned by another user, who cannot be the child or
	// broker of this user's session.
	ErrWrongOwner = errors.New("owned by another user")
	// ErrWritableByOthers: a directory that another user could plant
	// names in.
	ErrWritableByOthers = errors.New("writable by group or others")
)

// UnsafeFileError refuses a mailbox path. It wraps one of the reasons
// above and says which path and what was seen, so the caller can log it and
// quarantine or delete the file.
type UnsafeFileError struct {
	// Path is the refused path.
	Path string
	// Reason is one of ErrSymlink, ErrNotRegular, ErrNotDirectory,
	// ErrTooLarge, ErrHardLinked, ErrWrongOwner, ErrWritableByOthers.
	Reason error
	// Detail says what was found, e.g. "uid 65534, expected 1000".
	Detail string
}

// Error names the path, the reason and what was found, for a log line.
func (e *UnsafeFileError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("refusing mailbox path %s: %v", e.Path, e.Reason)
	}
	return fmt.Sprintf("refusing mailbox path %s: %v (%s)", e.Path, e.Reason, e.Detail)
}

// Unwrap returns the reason, so errors.Is(err, ErrTooLarge) works.
func (e *UnsafeFileError) Unwrap() error { return e.Reason }

func refuse(path string, reason error, format string, args ...any) *UnsafeFileError {
	return &UnsafeFileError{Path: path, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// ReadFile reads one mailbox file, treating it as hostile. It returns the
// content, an error wrapping fs.ErrNotExist when the file is gone (a normal
// race with its consumer), or an *UnsafeFileError when the path is not a
// plain file of ours: a symlink, FIFO, socket, device or directory; a file
// with more than one link; a file owned by another uid; a file over
// MaxFileSize. It never blocks on a FIFO and never follows a final symlink.
//
// The decision is made on fstat of the open descriptor, so swapping the
// name after the checks cannot change what is read. An lstat before the
// open only spares opening device nodes, whose open can have side effects
// (a terminal can become the broker's controlling terminal, a tape
// rewinds); O_NOFOLLOW and O_NONBLOCK cover symlinks and FIFOs without it.
func ReadFile(path string) ([]byte, error) {
	return readFileCap(path, MaxFileSize)
}

// Owner is the uid a mailbox file must belong to, or AnyOwner.
type Owner int

// AnyOwner accepts a file whatever uid owns it: the broker's read of
// requests in the isolation mode, where the owner is the requester.
const AnyOwner Owner = -1

// ReadFileOf is ReadFile for a file owner must own (see
// Layout.BrokerOwner and Layout.RequestOwner).
func ReadFileOf(path string, owner Owner) ([]byte, error) {
	data, _, err := readFileOwned(path, MaxFileSize, owner, nil)
	return data, err
}

// ReadFileIntoOf is ReadFileInto for a file owner must own; it also
// returns the uid that owns what was read, the requester's in the
// isolation mode.
func ReadFileIntoOf(path string, owner Owner, buffer func(size int64) []byte) (data []byte, uid int, err error) {
	return readFileOwned(path, MaxFileSize, owner, buffer)
}

// ReadFileInto is ReadFile, reading into a buffer of the caller's: buffer
// is given the size fstat found, once the file passed every check, and
// returns a slice whose capacity the file is read into (its length is
// ignored), or nil for a fresh one; a capacity under size+1 bytes is not
// used either (size+1: the read that finds a file grew after fstat needs
// room for a byte).
// The content returned is then the caller's buffer: a reader of files of
// a megabyte reuses one buffer across reads, where ReadFile leaves each
// to the garbage collector.
func ReadFileInto(path string, buffer func(size int64) []byte) ([]byte, error) {
	data, _, err := readFileOwned(path, MaxFileSize, Owner(processEUID), buffer)
	return data, err
}

func readFileCap(path string, limit int64) ([]byte, error) {
	data, _, err := readFileOwned(path, limit, Owner(processEUID), nil)
	return data, err
}

func readFileOwned(path string, limit int64, owner Owner, buffer func(size int64) []byte) ([]byte, int, error) {
	var pre unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Lstat(path, &pre) }); err != nil {
		return nil, 0, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	if err := checkFileMode(path, uint32(pre.Mode)); err != nil {
		return nil, 0, err
	}

	var fd int
	err := ignoringEINTR(func() error {
		var err error
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return err
	})
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, 0, refuse(path, ErrSymlink, "replaced by a symbolic link while opening")
	case errors.Is(err, unix.ENXIO):
		return nil, 0, refuse(path, ErrNotRegular, "replaced by a socket while opening")
	case err != nil:
		return nil, 0, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	// The descriptor is used raw, not through os.NewFile: an *os.File
	// would cost an fcntl and a failed epoll registration (a regular file
	// cannot be polled) on every read, and nothing here needs it.
	defer unix.Close(fd)
	if testHookAfterOpen != nil {
		testHookAfterOpen(path)
	}

	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return nil, 0, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if err := checkFileMode(path, uint32(st.Mode)); err != nil {
		return nil, 0, err
	}
	if st.Nlink == 0 {
		// Removed between our open and fstat: its consumer or writer
		// took it (a child abandoning its request, a child collecting
		// its answer). Gone, not hostile.
		return nil, 0, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	if st.Nlink != 1 {
		return nil, 0, refuse(path, ErrHardLinked, "%d links", st.Nlink)
	}
	if owner != AnyOwner && int(st.Uid) != int(owner) {
		return nil, 0, refuse(path, ErrWrongOwner, "uid %d, expected %d", st.Uid, owner)
	}
	if st.Size > limit {
		return nil, 0, refuse(path, ErrTooLarge, "%d bytes, at most %d", st.Size, limit)
	}
	var buf []byte
	if buffer != nil {
		buf = buffer(st.Size)
	}
	data, err := readAtMost(fd, st.Size, limit+1, buf)
	if err != nil {
		return nil, 0, fmt.Errorf("read mailbox file %s: %w", path, &fs.PathError{Op: "read", Path: path, Err: err})
	}
	if int64(len(data)) > limit {
		return nil, 0, refuse(path, ErrTooLarge, "grew past %d bytes while being read", limit)
	}
	return data, int(st.Uid), nil
}

// readAtMost reads fd to its end, but no more than max bytes. The size can
// grow after fstat (a writer may still hold the file open), so the cap is
// enforced on what is actually read, not on size. It stops once size
// bytes are read (size 0 reads to the end: a file whose size fstat does
// not know); the buffer starts one byte past size, so a file that grew is
// read on without growing it at once. It reads into buf's capacity when
// that is enough for size+1 bytes (or max), and into a fresh buffer
// otherwise.
func readAtMost(fd int, size, max int64, buf []byte) ([]byte, error) {
	if want := min(size+1, max); int64(cap(buf)) < want {
		buf = make([]byte, 0, want)
	} else {
		buf = buf[:0]
	}
	for int64(len(buf)) < max {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(int64(cap(buf)), max-int64(len(buf)))))
		}
		var n int
		err := ignoringEINTR(func() error {
			var err error
			n, err = unix.Read(fd, buf[len(buf):cap(buf)])
			return err
		})
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
		if int64(len(buf)) == size && size > 0 {
			// All fstat saw: the read that would find the end is a
			// system call more on every file, and a file that grows
			// after fstat is one still being written, which the
			// reader of its bytes finds cut and looks at again.
			break
		}
	}
	return buf, nil
}

// processEUID is the effective uid every mailbox file must belong to.
// courier never changes its uid, and asking the kernel on every read is a
// system call, which costs microseconds on the VMs courier runs on.
var processEUID = os.Geteuid()

// testHookAfterOpen runs between the open and the fstat (tests only).
var testHookAfterOpen func(path string)

func checkFileMode(path string, mode uint32) error {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFLNK:
		return refuse(path, ErrSymlink, "")
	}
	return refuse(path, ErrNotRegular, "%s", typeName(mode))
}

func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFLNK:
		return "symbolic link"
	case unix.S_IFREG:
		return "regular file"
	}
	return fmt.Sprintf("file type %#o", mode&unix.S_IFMT)
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// CheckTree vets a mailbox tree before a broker trusts it: dir and every
// directory below it must be a real directory (not a symlink to one), owned
// by the effective uid, and not writable by group or others. pi 20.x
// creates its directories 0755, which passes; what fails is a tree where
// another user could plant or swap names. Files are not judged here (a bad
// request is the reader's business and must not stop the broker), except
// that a symlink pointing at a directory counts as a directory.
//
// It returns nil, an error wrapping fs.ErrNotExist when dir is missing, or
// the *UnsafeFileError of every offending directory joined together.
func CheckTree(dir string) error { return checkTree(dir, nil) }

// CheckTree is CheckTree of the layout's root, by the layout's mode: in
// the isolation mode the tree is the broker's user's (this process), and
// group write is admitted only on sticky directories of the ask group
// (requests/ and tmp/), never write for others.
func (l Layout) CheckTree() error { return checkTree(l.Root, l.Isolation) }

func checkTree(dir string, iso *Isolation) error {
	var problems []error
	euid := os.Geteuid()
	isoTree := Layout{Root: filepath.Clean(dir), Isolation: iso}
	var walk func(path string, top bool) error
	walk = func(path string, top bool) error {
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			if top || !errors.Is(err, unix.ENOENT) {
				return &fs.PathError{Op: "lstat", Path: path, Err: err}
			}
			return nil // removed while we walked: nothing left to judge
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			var target unix.Stat_t
			if top || (unix.Stat(path, &target) == nil && target.Mode&unix.S_IFMT == unix.S_IFDIR) {
				problems = append(problems, refuse(path, ErrSymlink, "a directory of the mailbox tree"))
			}
			return nil
		default:
			if top {
				problems = append(problems, refuse(path, ErrNotDirectory, "%s", typeName(uint32(st.Mode))))
			}
			return nil
		}
		if int(st.Uid) != euid {
			problems = append(problems, refuse(path, ErrWrongOwner, "uid %d, expected %d", st.Uid, euid))
		}
		if iso != nil {
			if err := isoTree.checkIsoDir(path, &st); err != nil {
				problems = append(problems, err)
			}
			if isoTree.isDropDir(path) {
				// What the ask group drops in tmp/ or requests/ is
				// not the tree; its readers refuse it by type. Judged
				// here, one child's mkdir would stop the broker.
				return nil
			}
		} else if perm := st.Mode & 0o777; perm&0o022 != 0 {
			problems = append(problems, refuse(path, ErrWritableByOthers, "mode %#o", perm))
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			if !top && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("check mailbox tree: %w", err)
		}
		for _, e := range entries {
			if t := e.Type(); t&fs.ModeDir == 0 && t&fs.ModeSymlink == 0 {
				continue
			}
			if err := walk(filepath.Join(path, e.Name()), false); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(dir, true); err != nil {
		return err
	}
	return errors.Join(problems...)
}
