//go:build unix

package natsembed

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/internal/fileperm"
)

// The users of the embedded server without --nats-config (issue 21, F2).
// A server without users admits every process that can connect: on a
// loopback address every process of the machine, of any uid, which could
// then read the requests and publish answers bound to their bytes. The
// file mailbox (0700 directories) is not that open, and the engine must
// not be either: the broker's own server gets the two users of natsbox's
// tested permission layout (natsbox/testdata/permissions.conf), each with
// a random password in a file of the store.
const (
	// BrokerUser is the user the broker connects as.
	BrokerUser = "broker"
	// OwnerUser is the one owner every child of this host asks as.
	OwnerUser = "local"
)

// Files in the store, beside JetStream's own directory.
const (
	brokerPasswordName = "broker.password"
	localPasswordName  = "local.password"
	serverConfigName   = "server.conf"
	// jetStreamDirName is where nats-server keeps its streams under the
	// store; made 0700 here first, since the server would make it 0750
	// and the store is the ask group's in the isolation mode.
	jetStreamDirName = "jetstream"
)

// passwordBytes is the entropy of a generated password (crypto/rand).
const passwordBytes = 32

// passwordLine is a password file as the broker writes it: the base64url
// of passwordBytes, one line. Anything else is refused, not used: the
// password is written into the server's config.
var passwordLine = regexp.MustCompile(`^[A-Za-z0-9_-]{43}\n$`)

// Users are the generated users and their files, as PrepareUsers made
// them.
type Users struct {
	// Config is the server configuration file with both users: the
	// ConfigFile of the server's Options.
	Config string
	// Broker and Owner are the users' names: BrokerUser and OwnerUser.
	Broker, Owner string
	// BrokerPassword and OwnerPassword are the password files of Broker
	// and Owner.
	BrokerPassword, OwnerPassword string
}

// PrepareUsers makes the store and the users' files: the store
// 0700 (0710 and the ask group in the isolation mode, so that its members
// reach local.password), broker.password 0600, local.password 0600 (0640
// and the ask group in the isolation mode) and server.conf 0600, all the
// broker's user's. askGroup is the ask group's gid in the isolation mode
// (broker serve --ask-group), -1 without it. Password files are kept
// across restarts when they are exactly what the broker writes (its user,
// that mode and group, one generated password); any other is refused
// (a *fileperm.Error, wrapping fileperm.ErrRefused, as the broker's other trusted files are refused), naming it and how to
// fix it, never used: someone else may have read or chosen the password.
// The store's errors name it as broker serve's --nats-store.
func PrepareUsers(store string, askGroup int) (Users, error) {
	storeMode, localMode, gid := fs.FileMode(0o700), fs.FileMode(0o600), -1
	if askGroup >= 0 {
		storeMode, localMode, gid = 0o710, 0o640, askGroup
	}
	if err := prepareStore(store, storeMode, gid); err != nil {
		return Users{}, err
	}
	u := Users{
		Config:         filepath.Join(store, serverConfigName),
		Broker:         BrokerUser,
		Owner:          OwnerUser,
		BrokerPassword: filepath.Join(store, brokerPasswordName),
		OwnerPassword:  filepath.Join(store, localPasswordName),
	}
	brokerPW, err := keepPassword(u.BrokerPassword, 0o600, -1)
	if err != nil {
		return Users{}, err
	}
	localPW, err := keepPassword(u.OwnerPassword, localMode, gid)
	if err != nil {
		return Users{}, err
	}
	conf := serverConfig(brokerPW, localPW)
	if err := writePrivate(store, u.Config, []byte(conf), 0o600, -1, true); err != nil {
		return Users{}, fmt.Errorf("NATS server config %s: %w", u.Config, err)
	}
	return u, nil
}

// prepareStore creates the store (and its parents) when missing and
// gives it mode and group gid (-1 keeps it); a store of another user is
// refused. JetStream's directory inside is made 0700.
func prepareStore(store string, mode fs.FileMode, gid int) error {
	if err := os.MkdirAll(store, 0o700); err != nil {
		return fmt.Errorf("--nats-store %s: %w", store, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(store, &st); err != nil {
		return fmt.Errorf("--nats-store %s: %w", store, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return &fileperm.Error{What: "NATS store", Path: store, Problem: "not a directory (a symbolic link is not followed)", Fix: "give the directory itself"}
	case int(st.Uid) != os.Geteuid():
		return &fileperm.Error{What: "NATS store", Path: store,
			Problem: fmt.Sprintf("owned by uid %d, expected uid %d (the broker's user): its owner could read the users' passwords or swap them", st.Uid, os.Geteuid()),
			Fix:     "give a directory of the broker's user (--nats-store)"}
	}
	// Whoever could write the store, or the directory that holds it,
	// could have planted its contents (the engine's streams among them)
	// or could swap the whole store for one with passwords of their own;
	// a chmod now would not take back a way in they already hold.
	if perm := st.Mode & 0o777; perm&0o022 != 0 {
		return &fileperm.Error{What: "NATS store", Path: store,
			Problem: fmt.Sprintf("mode %04o lets group or others write it, so what is in it may be theirs", perm),
			Fix:     "remove it and let the broker make it, or give another --nats-store"}
	}
	if err := fileperm.CheckDir("NATS store", store, fileperm.SelfOrRoot); err != nil {
		return err
	}
	if gid >= 0 && int(st.Gid) != gid {
		if err := os.Chown(store, -1, gid); err != nil {
			return fmt.Errorf("--nats-store %s: giving it the ask group: %w", store, err)
		}
	}
	if err := os.Chmod(store, mode); err != nil {
		return fmt.Errorf("--nats-store %s: %w", store, err)
	}
	js := filepath.Join(store, jetStreamDirName)
	if err := os.Mkdir(js, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("--nats-store %s: %w", store, err)
	}
	if err := unix.Lstat(js, &st); err != nil {
		return fmt.Errorf("--nats-store %s: %w", store, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return &fileperm.Error{What: "NATS store's JetStream directory", Path: js, Problem: "not a directory (a symbolic link is not followed)", Fix: "remove it and let the broker make it"}
	case int(st.Uid) != os.Geteuid():
		return &fileperm.Error{What: "NATS store's JetStream directory", Path: js,
			Problem: fmt.Sprintf("owned by uid %d, expected uid %d (the broker's user): its owner could plant streams, answers among them", st.Uid, os.Geteuid()),
			Fix:     "remove it and let the broker make it"}
	case st.Mode&0o022 != 0:
		return &fileperm.Error{What: "NATS store's JetStream directory", Path: js,
			Problem: fmt.Sprintf("mode %04o lets group or others write it, so the streams in it may be theirs", st.Mode&0o777),
			Fix:     "remove it and let the broker make it"}
	}
	// One an earlier server made (0750) is closed too: the store may be
	// the ask group's now.
	if err := os.Chmod(js, 0o700); err != nil {
		return fmt.Errorf("--nats-store %s: %w", store, err)
	}
	return nil
}

// keepPassword returns the password in path, or writes a new one there
// when there is none. A file that is not exactly what the broker writes
// (a regular file of its user, with mode and group gid, one generated
// password) is refused.
func keepPassword(path string, mode fs.FileMode, gid int) (string, error) {
	for range 2 {
		pw, err := readPassword(path, mode, gid)
		if !errors.Is(err, fs.ErrNotExist) {
			return pw, err
		}
		buf := make([]byte, passwordBytes)
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("NATS password file %s: %w", path, err)
		}
		pw = base64.RawURLEncoding.EncodeToString(buf)
		err = writePrivate(filepath.Dir(path), path, []byte(pw+"\n"), mode, gid, false)
		if !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return "", fmt.Errorf("NATS password file %s: %w", path, err)
			}
			return pw, nil
		}
		// Another broker of this store wrote it meanwhile: read that.
	}
	return "", fmt.Errorf("NATS password file %s: created and removed while this broker started", path)
}

// readPassword reads the password file at path as keepPassword trusts it.
func readPassword(path string, mode fs.FileMode, gid int) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return "", refusedPassword(path, "a symbolic link")
		}
		return "", fmt.Errorf("NATS password file: %w", err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "", fmt.Errorf("NATS password file %s: %w", path, err)
	}
	perm := fs.FileMode(st.Mode & 0o7777)
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return "", refusedPassword(path, "not a regular file")
	case int(st.Uid) != os.Geteuid():
		return "", refusedPassword(path, fmt.Sprintf("owned by uid %d, expected uid %d (the broker's user)", st.Uid, os.Geteuid()))
	case perm != mode:
		return "", refusedPassword(path, fmt.Sprintf("mode %04o, expected %04o: others may have read the password", perm, mode))
	case gid >= 0 && int(st.Gid) != gid:
		return "", refusedPassword(path, fmt.Sprintf("group %d, expected the ask group %d", st.Gid, gid))
	}
	data, err := io.ReadAll(io.LimitReader(f, 128))
	if err != nil {
		return "", fmt.Errorf("NATS password file %s: %w", path, err)
	}
	if !passwordLine.Match(data) {
		return "", refusedPassword(path, "not a password the broker generated (one line of 43 base64url characters)")
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// refusedPassword refuses the password file path for problem; removing it
// makes the broker write a new one.
func refusedPassword(path, problem string) error {
	return &fileperm.Error{What: "NATS password file", Path: path, Problem: problem,
		Fix: "remove it (rm " + path + ") and the broker writes a new one; children read it at each ask"}
}

// writePrivate writes data to path through a temporary file in dir, so
// that a reader never sees a part of it: with mode and group gid (-1
// keeps the broker's), synced, then linked into place. replace says
// whether an existing path is replaced; without it the error wraps
// fs.ErrExist.
func writePrivate(dir, path string, data []byte, mode fs.FileMode, gid int, replace bool) error {
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer os.Remove(name)
	err = func() error {
		defer tmp.Close()
		if gid >= 0 {
			if err := tmp.Chown(-1, gid); err != nil {
				return err
			}
		}
		if err := tmp.Chmod(mode); err != nil {
			return err
		}
		if _, err := tmp.Write(data); err != nil {
			return err
		}
		if err := tmp.Sync(); err != nil {
			return err
		}
		return tmp.Close()
	}()
	if err != nil {
		return err
	}
	if replace {
		return os.Rename(name, path)
	}
	return os.Link(name, path)
}

// serverConfig is the embedded server's configuration without
// --nats-config: the account COURIER with JetStream, the user broker and
// the owner local, with the permissions of natsbox's tested layout
// (natsbox/testdata/permissions.conf, its broker row and its owner row
// for the owner local; TestEmbeddedPermissionsMatchTheLayout compares
// them). The passwords are plain: the file is as private as the password
// files, and a bcrypt hash would cost every child's connection its
// hashing.
func serverConfig(brokerPW, localPW string) string {
	return `# Written by broker serve --nats-listen without --nats-config at each
# start (docs/DISTRIBUTED.md, docs/decisions/0027-nats-engine-layout.md).
# The passwords are those of broker.password and local.password beside it.
accounts {
  COURIER {
    jetstream: enabled
    users: [
      {
        user: ` + BrokerUser + `, password: "` + brokerPW + `"
        permissions: {
          publish: {
            allow: [
              "$JS.API.>",
              "$JS.ACK.COURIER_REQUESTS.>",
              "courier.resp.>",
              "$KV.courier_serving.>",
              "$KV.courier_lease.>"
            ]
          }
          subscribe: {
            allow: ["courier.gone.>", "_INBOX.>", "_INBOX_broker.>"]
          }
        }
      }
      {
        user: ` + OwnerUser + `, password: "` + localPW + `"
        permissions: {
          publish: {
            allow: [
              "courier.req.*.` + OwnerUser + `.*",
              "courier.gone.*.` + OwnerUser + `.*",
              "$JS.API.DIRECT.GET.COURIER_RESPONSES.courier.resp.*.` + OwnerUser + `.*",
              "$JS.API.DIRECT.GET.KV_courier_serving.$KV.courier_serving.*"
            ]
          }
          subscribe: {
            allow: ["courier.resp.*.` + OwnerUser + `.*", "_INBOX_` + OwnerUser + `.>"]
          }
        }
      }
    ]
  }
}
`
}
