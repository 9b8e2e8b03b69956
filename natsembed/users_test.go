//go:build unix

package natsembed

import (
	"github.com/seed6639df8c/courier/internal/fileperm"

	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nats-io/nats-server/v2/conf"
)

// The generated users have exactly the permissions of natsbox's tested
// layout: the broker row as it is, and the owner row of alice with the
// owner local. A change to the layout fails here until serverConfig
// follows it. The layout is read as a file, not through natsbox: this
// package is a leaf.
func TestEmbeddedPermissionsMatchTheLayout(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "natsbox", "testdata", "permissions.conf"))
	if err != nil {
		t.Fatal(err)
	}
	layout := userPermissions(t, string(data))
	generated := userPermissions(t, serverConfig(strings.Repeat("b", 43), strings.Repeat("l", 43)))
	if len(generated) != 2 {
		t.Errorf("generated users %v, want broker and local only", generated)
	}
	for user, want := range map[string]string{"broker": layout["broker"], "local": strings.ReplaceAll(layout["alice"], "alice", "local")} {
		if want == "" || generated[user] != want {
			t.Errorf("user %s: generated permissions\n%s\nthe layout's\n%s", user, generated[user], want)
		}
	}
}

// userPermissions parses a nats-server config and returns the account
// COURIER's users' permissions, as JSON.
func userPermissions(t *testing.T, text string) map[string]string {
	t.Helper()
	m, err := conf.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	account, _ := m["accounts"].(map[string]any)["COURIER"].(map[string]any)
	if account["jetstream"] != "enabled" {
		t.Errorf("account COURIER: jetstream %v, want enabled", account["jetstream"])
	}
	out := map[string]string{}
	users, _ := account["users"].([]any)
	for _, u := range users {
		u, _ := u.(map[string]any)
		perms, err := json.Marshal(u["permissions"])
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprint(u["user"])] = string(perms)
	}
	return out
}

// PrepareUsers makes the store and the users' files with the modes and
// group the broker's tests check through broker serve (cmd/broker), keeps
// the passwords across calls, and refuses a password file others could
// have read, wrapping fileperm.ErrRefused (the broker's usage exit).
func TestPrepareUsers(t *testing.T) {
	group := os.Getegid()
	if os.Geteuid() == 0 {
		group = 61000 // root may give the files any group: a real one is checked
	}
	for _, c := range []struct {
		name                   string
		askGroup               int
		storeMode, ownerMode   os.FileMode
		storeGroup, ownerGroup int
	}{
		{"without an ask group", -1, 0o700, 0o600, -1, -1},
		{"with an ask group", group, 0o710, 0o640, group, group},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "nats")
			u, err := PrepareUsers(store, c.askGroup)
			if err != nil {
				t.Fatal(err)
			}
			want := Users{
				Config: filepath.Join(store, "server.conf"), Broker: "broker", Owner: "local",
				BrokerPassword: filepath.Join(store, "broker.password"), OwnerPassword: filepath.Join(store, "local.password"),
			}
			if u != want {
				t.Fatalf("users %+v, want %+v", u, want)
			}
			checkFile(t, store, c.storeMode, c.storeGroup)
			checkFile(t, filepath.Join(store, "jetstream"), 0o700, -1)
			checkFile(t, u.BrokerPassword, 0o600, -1)
			checkFile(t, u.OwnerPassword, c.ownerMode, c.ownerGroup)
			checkFile(t, u.Config, 0o600, -1)
			first, err := os.ReadFile(u.OwnerPassword)
			if err != nil {
				t.Fatal(err)
			}
			if !passwordLine.Match(first) {
				t.Errorf("local.password %q: want 32 random bytes, base64url", first)
			}
			if _, err := PrepareUsers(store, c.askGroup); err != nil {
				t.Fatal(err)
			}
			if again, _ := os.ReadFile(u.OwnerPassword); string(again) != string(first) {
				t.Error("the password changed across a second call")
			}
			config, err := os.ReadFile(u.Config)
			if err != nil || !strings.Contains(string(config), `password: "`+strings.TrimSuffix(string(first), "\n")+`"`) {
				t.Errorf("server.conf lacks local's password (%v)", err)
			}

			if err := os.Chmod(u.OwnerPassword, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = PrepareUsers(store, c.askGroup)
			if wantMsg := fmt.Sprintf("mode 0644, expected %04o", c.ownerMode); !errors.Is(err, fileperm.ErrRefused) || !strings.Contains(fmt.Sprint(err), wantMsg) {
				t.Errorf("a password file others may read: %v, want refused saying %q", err, wantMsg)
			}
		})
	}
}

// checkFile checks path's permission bits, that this process's user owns
// it, and its group unless gid is -1.
func checkFile(t *testing.T, path string, mode os.FileMode, gid int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != mode {
		t.Errorf("%s: mode %04o, want %04o", path, got, mode)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != os.Geteuid() {
		t.Errorf("%s: owner uid %d, want %d", path, st.Uid, os.Geteuid())
	}
	if gid >= 0 && int(st.Gid) != gid {
		t.Errorf("%s: group %d, want %d", path, st.Gid, gid)
	}
}

// A store whose contents another user could have planted, or that another
// user could swap, is refused before anything is written into it: a
// JetStream directory of another uid (its owner kept write access to the
// streams, answers among them, through a directory it held open), one
// others may write, a store others may write, a store in a directory
// others may write.
func TestPrepareUsersRefusesAStoreOthersCouldHavePlanted(t *testing.T) {
	for _, c := range []struct {
		name     string
		plant    func(t *testing.T, parent, store string)
		needRoot bool
	}{
		{"a store others may write", func(t *testing.T, _, store string) {
			mkdirMode(t, store, 0o777)
		}, false},
		{"a store in a directory others may write", func(t *testing.T, parent, _ string) {
			if err := os.Chmod(parent, 0o777); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a JetStream directory others may write", func(t *testing.T, _, store string) {
			mkdirMode(t, store, 0o700)
			mkdirMode(t, filepath.Join(store, "jetstream"), 0o777)
		}, false},
		{"a JetStream directory that is a link", func(t *testing.T, parent, store string) {
			mkdirMode(t, store, 0o700)
			mkdirMode(t, filepath.Join(parent, "elsewhere"), 0o700)
			if err := os.Symlink(filepath.Join(parent, "elsewhere"), filepath.Join(store, "jetstream")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a JetStream directory of another uid", func(t *testing.T, _, store string) {
			mkdirMode(t, store, 0o700)
			js := filepath.Join(store, "jetstream")
			mkdirMode(t, js, 0o700)
			if err := os.Chown(js, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.needRoot && os.Geteuid() != 0 {
				t.Skip("needs root to give a directory to another uid")
			}
			parent := filepath.Join(t.TempDir(), "p")
			mkdirMode(t, parent, 0o700)
			store := filepath.Join(parent, "nats")
			c.plant(t, parent, store)
			_, err := PrepareUsers(store, -1)
			if !errors.Is(err, fileperm.ErrRefused) {
				t.Fatalf("PrepareUsers = %v, want a refusal (fileperm.ErrRefused)", err)
			}
			if _, serr := os.Stat(filepath.Join(store, "broker.password")); serr == nil {
				t.Error("a password was written into a refused store")
			}
		})
	}
}

func mkdirMode(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
