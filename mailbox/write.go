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
	// nothing on tmpfs); responses use it because a request is deleted
	// once its response is written, and a lost response would leave the
	// child with nothing.
	SyncDir bool
}

// WriteFile publishes data at path atomically: readers see either no file,
// the previous file, or all of data, never a prefix. The content is staged
// in TempDir (created 0700 on first use) and renamed into place, so a
// watched directory sees exactly one Create for it. The file is 0600
// regardless of the umask. path must lie inside the root, because a rename
// cannot cross filesystems; its directory must exist.
func (l Layout) WriteFile(path string, data []byte, opts WriteOptions) error {
	if err := l.within(path); err != nil {
		return err
	}
	if err := l.publish(path, data); err != nil {
		return fmt.Errorf("write mailbox file %s: %w", path, err)
	}
	if opts.SyncDir {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("write mailbox file %s: %w", path, err)
		}
	}
	return nil
}

// WriteRequest publishes a child's request for session. The inbox must
// exist (see EnsureInbox): a child that finds it gone has lost a race with
// the broker's cleanup and should ensure it again and retry, as pi does.
func (l Layout) WriteRequest(session, requestID string, data []byte) error {
	path, err := l.RequestPath(session, requestID)
	if err != nil {
		return err
	}
	return l.WriteFile(path, data, WriteOptions{})
}

// WriteResponse publishes the broker's answer to requestID, durably. It
// first recreates responses/ if a child's cleanup removed it between the
// request being read and answered (pi #398), but it never recreates the
// session directory: a session directory that is gone means every child
// abandoned the inbox, and an answer there would be an orphan.
func (l Layout) WriteResponse(session, requestID string, data []byte) error {
	path, err := l.ResponsePath(session, requestID)
	if err != nil {
		return err
	}
	if err := mkdirPrivate(filepath.Dir(path)); err != nil {
		return err
	}
	return l.WriteFile(path, data, WriteOptions{SyncDir: true})
}

// within refuses a path that is not strictly below the root.
func (l Layout) within(path string) error {
	rel, err := filepath.Rel(l.Root, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("write mailbox file %s: outside the mailbox root %s", path, l.Root)
	}
	return nil
}

func (l Layout) publish(path string, data []byte) error {
	opts := []renameio.Option{
		renameio.WithTempDir(l.TempDir()),
		renameio.WithStaticPermissions(fileMode),
	}
	pf, err := renameio.NewPendingFile(path, opts...)
	if errors.Is(err, fs.ErrNotExist) {
		// The staging directory is created lazily, and may have been
		// removed by someone tidying the tree.
		if err := mkdirAllPrivate(l.TempDir()); err != nil {
			return err
		}
		pf, err = renameio.NewPendingFile(path, opts...)
	}
	if err != nil {
		return err
	}
	defer pf.Cleanup()
	if _, err := pf.Write(data); err != nil {
		return err
	}
	return pf.CloseAtomicallyReplace()
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
