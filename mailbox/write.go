package mailbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"
)

// fileMode is the mode of every file courier publishes, whatever the umask:
// requests and responses carry the prompt text and are never redacted.
const fileMode fs.FileMode = 0o600

// WriteOptions tune one atomic write.
type WriteOptions struct {
	// SyncDir fsyncs the destination directory after the rename, so the
	// new name itself survives a crash of the machine, not just its
	// content. It costs a disk flush (about a millisecond on ext4,
	// nothing on tmpfs), so it is for state that outlives the session,
	// such as courier's grant journals. Mailbox files (requests,
	// responses, heartbeats) do not use it: they matter only while the
	// child and the broker both live, and a power cut ends both
	// (docs/decisions/0007).
	SyncDir bool
	// Mode is the file's mode; zero is 0600. Readers of other users
	// need more in the isolation mode (vouched grant journals 0644).
	Mode fs.FileMode
}

// WriteFile publishes data at path atomically: readers see either no file,
// the previous file, or all of data, never a prefix. The content is staged
// in TempDir (created 0700 on first use) and renamed into place, so a
// watched directory sees exactly one Create for it. (WriteRequest and
// WriteResponse, whose names are new, link an unnamed file there instead
// where the system allows: publishLinked.) The file is 0600 regardless of
// the umask. path must lie inside the root, because a rename
// cannot cross filesystems; its directory must exist.
func (l Layout) WriteFile(path string, data []byte, opts WriteOptions) error {
	_, err := l.write(path, data, opts, publishNamed)
	return err
}

// How write publishes a file: by name (WriteFile: names that usually
// exist), by a link where possible (a request's new name), or so and
// telling whether a file was there before (a response's name).
type publishMode int

const (
	publishNamed publishMode = iota
	publishFresh
	publishFreshTell
)

// write is WriteFile, published as pm says; existed is whether a file was
// found under the name, for publishFreshTell.
func (l Layout) write(path string, data []byte, opts WriteOptions, pm publishMode) (existed bool, err error) {
	if err := l.within(path); err != nil {
		return false, err
	}
	mode := opts.Mode
	if mode == 0 {
		mode = fileMode
	}
	if existed, err = l.publish(path, data, mode, pm); err != nil {
		return existed, fmt.Errorf("write mailbox file %s: %w", path, err)
	}
	if opts.SyncDir {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return existed, fmt.Errorf("write mailbox file %s: %w", path, err)
		}
	}
	return existed, nil
}

// WriteRequest publishes a child's request for session. The inbox must
// exist (see EnsureInbox): a child that finds it gone has lost a race with
// the broker's cleanup and should ensure it again and retry, as pi does.
func (l Layout) WriteRequest(session, requestID string, data []byte) error {
	path, err := l.RequestPath(session, requestID)
	if err != nil {
		return err
	}
	_, err = l.write(path, data, WriteOptions{Mode: l.mailFileMode()}, publishFresh)
	return err
}

// WriteResponse publishes the broker's answer to requestID atomically: a
// crash of either process leaves no file or the whole answer. It does not
// fsync the directory, so a power cut may lose the answer, but it also
// ends the child that waits for it (docs/decisions/0007).
//
// If a child's cleanup removed responses/ between the request being read
// and answered (docs/GLOSSARY.md, "cleanup order"), the write fails with the directory missing;
// WriteResponse then recreates responses/ and writes once more. It never
// recreates the session directory: a session directory that is gone means
// every child abandoned the inbox, and an answer there would be an orphan.
// responses/ is created only on that failure, not before every answer,
// because it is almost always there and each system call costs.
func (l Layout) WriteResponse(session, requestID string, data []byte) error {
	_, err := l.WriteResponseOver(session, requestID, data)
	return err
}

// WriteResponseOver is WriteResponse, and reports whether a file was
// already there under the answer's name, which the answer replaced: a
// broker that did not write it has found a plant, or a predecessor's
// answer (serve's answeredOnDisk).
func (l Layout) WriteResponseOver(session, requestID string, data []byte) (over bool, err error) {
	path, err := l.ResponsePath(session, requestID)
	if err != nil {
		return false, err
	}
	opts := WriteOptions{Mode: l.mailFileMode()}
	over, err = l.write(path, data, opts, publishFreshTell)
	if !errors.Is(err, fs.ErrNotExist) {
		return over, err
	}
	if err := l.mkdir(filepath.Dir(path), false, isoDirMode); err != nil {
		return false, err
	}
	return l.write(path, data, opts, publishFreshTell)
}

// within refuses a path that is not strictly below the root.
func (l Layout) within(path string) error {
	rel, err := filepath.Rel(l.Root, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("write mailbox file %s: outside the mailbox root %s", path, l.Root)
	}
	return nil
}

// publish writes data at path. A fresh name is published by a link where
// the system allows (publishLinked); a name that usually exists already
// (a heartbeat, a grant journal) is not, since a link never replaces and
// the attempt would only add its cost.
func (l Layout) publish(path string, data []byte, mode fs.FileMode, pm publishMode) (existed bool, err error) {
	if pm != publishNamed {
		var done bool
		if done, existed, err = publishLinked(l.TempDir(), path, data, mode); done || err != nil {
			return existed, err
		}
		if !existed && pm == publishFreshTell {
			// Linking was not possible here: whether the rename below
			// replaces a file is looked at, as the link would tell.
			_, lerr := os.Lstat(path)
			existed = lerr == nil
		}
	}
	opts := []renameio.Option{
		renameio.WithTempDir(l.TempDir()),
		renameio.WithStaticPermissions(mode),
	}
	pf, err := renameio.NewPendingFile(path, opts...)
	if errors.Is(err, fs.ErrNotExist) {
		// The staging directory is created lazily, and may have been
		// removed by someone tidying the tree. In the isolation mode it
		// is the broker's to create (a child may not).
		if err := l.mkdir(l.TempDir(), true, isoDropMode); err != nil {
			return existed, err
		}
		pf, err = renameio.NewPendingFile(path, opts...)
	}
	if err != nil {
		return existed, err
	}
	defer pf.Cleanup()
	if _, err := pf.Write(data); err != nil {
		return existed, err
	}
	return existed, pf.CloseAtomicallyReplace()
}

// syncDir flushes a directory's entries, which is what makes a rename
// durable; renameio only syncs the file.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
