//go:build nats

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsforward"
	"github.com/seed6639df8c/courier/provenance"
)

// natsTestWait bounds every wait of the embedded-server tests.
const natsTestWait = 30 * time.Second

// brokerUnderTest is a broker serve --nats-listen running in the test.
type brokerUnderTest struct {
	stderr *syncBuffer
	done   chan int
	cancel context.CancelFunc
	// url, store and childArgs are read from its startup lines.
	url, store string
	childArgs  []string
}

// childLine is the startup line that says what a child on this host
// passes.
var childLine = regexp.MustCompile(`(?m)^broker: a child on this host asks over NATS with: (--transport (nats://127\.0\.0\.1:\d+) --nats-user local --nats-password-file (\S+))$`)

// startEmbeddedBroker runs broker serve --nats-listen 127.0.0.1:0 on root
// with args added, until the test ends, and reads its startup lines.
func startEmbeddedBroker(t *testing.T, root string, args ...string) *brokerUnderTest {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &brokerUnderTest{stderr: &syncBuffer{ready: make(chan struct{})}, done: make(chan int, 1), cancel: cancel}
	all := append([]string{"serve", "--session", "s", "--root", root, "--log", "-", "--terminal", "deny", "--nats-listen", "127.0.0.1:0"}, args...)
	go func() { b.done <- run(ctx, all, nil, os.Stderr, b.stderr) }()
	t.Cleanup(func() { b.stop(t) })
	select {
	case <-b.stderr.ready:
	case code := <-b.done:
		b.done <- code
		t.Fatalf("exit %d: %s", code, b.stderr.String())
	case <-time.After(natsTestWait):
		t.Fatalf("not serving: %s", b.stderr.String())
	}
	m := childLine.FindStringSubmatch(b.stderr.String())
	if m == nil {
		t.Fatalf("no line saying what a child passes: %s", b.stderr.String())
	}
	b.childArgs, b.url, b.store = strings.Fields(m[1]), m[2], filepath.Dir(m[3])
	return b
}

// stop ends the broker and checks that it stopped cleanly.
func (b *brokerUnderTest) stop(t *testing.T) {
	if b.cancel == nil {
		return
	}
	b.cancel()
	b.cancel = nil
	select {
	case code := <-b.done:
		if code != 0 || !strings.Contains(b.stderr.String(), "broker: stopped") {
			t.Errorf("exit %d: %s", code, b.stderr.String())
		}
	case <-time.After(natsTestWait):
		t.Error("did not stop")
	}
}

// connectAs connects to the broker's engine as user with the password in
// passwordFile; inbox is the connection's inbox prefix ("" the default).
func connectAs(t *testing.T, url, user, passwordFile, inbox string, errs chan<- error) *nats.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), natsTestWait)
	defer cancel()
	opts := natsbox.Options{URL: url, User: user, PasswordFile: passwordFile, InboxPrefix: inbox, Name: "test " + user}
	if errs != nil {
		opts.Extra = []nats.Option{nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		})}
	}
	nc, err := natsbox.Connect(ctx, opts)
	if err != nil {
		t.Fatalf("connecting as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// awaitViolation waits for the server's permissions violation naming
// subject.
func awaitViolation(t *testing.T, errs <-chan error, what, subject string) {
	t.Helper()
	timeout := time.After(natsTestWait)
	for {
		select {
		case err := <-errs:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject) {
				return
			}
			t.Logf("%s: %v", what, err)
		case <-timeout:
			t.Fatalf("%s: no permissions violation for %s", what, subject)
		}
	}
}

// The embedded server of broker serve --nats-listen without --nats-config
// has users (issue 21, F2). The attack it stops, seen with the real
// binaries on the server without users: any process of any uid on the
// machine subscribed to courier.req.>, published an answer bound to the
// request's bytes on courier.resp.…, and the child took it. Now: a
// connection without credentials is refused by the server; the owner
// "local", which every child of this host asks as, can neither read the
// requests nor publish a response; and a child with exactly the flags the
// broker prints gets the broker's answer. Seen failing before the change:
// the unauthenticated connection was accepted and there was no line
// naming the credentials.
func TestEmbeddedServerHasUsers(t *testing.T) {
	root := t.TempDir()
	b := startEmbeddedBroker(t, root)
	if want := filepath.Join(root, "courier", "nats"); b.store != want {
		t.Errorf("the password file is in %s, want the store %s", b.store, want)
	}

	// No credentials: the server refuses, whatever the client allows.
	if nc, err := nats.Connect(b.url, nats.NoReconnect(), nats.Timeout(natsTestWait)); err == nil {
		nc.Close()
		t.Error("a connection without credentials was accepted")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization violation") {
		t.Errorf("a connection without credentials: %v, want an authorization violation", err)
	}
	// A wrong password too.
	if nc, err := nats.Connect(b.url, nats.NoReconnect(), nats.UserInfo("local", "not-the-password")); err == nil {
		nc.Close()
		t.Error("a wrong password was accepted")
	}

	// The forging attack as the owner every child of this host has the
	// password of.
	errs := make(chan error, 16)
	attacker := connectAs(t, b.url, "local", filepath.Join(b.store, "local.password"), "_INBOX_local", errs)
	if _, err := attacker.Subscribe("courier.req.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	awaitViolation(t, errs, "local subscribing to the requests", "courier.req.>")
	forged := "courier.resp.s.local.forged-1"
	if err := attacker.Publish(forged, []byte(`{"approved":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := attacker.Flush(); err != nil {
		t.Fatal(err)
	}
	awaitViolation(t, errs, "local publishing a response", forged)
	for _, subject := range []string{"courier.gone.s.other.r", "$KV.courier_serving.s", "$JS.API.STREAM.DELETE.COURIER_RESPONSES"} {
		if err := attacker.Publish(subject, nil); err != nil {
			t.Fatal(err)
		}
		attacker.Flush()
		awaitViolation(t, errs, "local publishing on "+subject, subject)
	}
	// The broker's view: nothing was kept on the forged subject.
	brokerConn := connectAs(t, b.url, "broker", filepath.Join(b.store, "broker.password"), "", nil)
	js, err := jetstream.New(brokerConn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), natsTestWait)
	defer cancel()
	if data, found, err := natsbox.LastResponse(ctx, js, forged); err != nil || found {
		t.Errorf("the forged response: kept %v (%q), %v", found, data, err)
	}

	// A child with the printed flags gets the broker's answer: the
	// built-in rule "git status *", nested under the broker's session.
	child := connectAs(t, b.url, "local", filepath.Join(b.store, "local.password"), "_INBOX_local", nil)
	childJS, err := jetstream.New(child)
	if err != nil {
		t.Fatal(err)
	}
	id, err := forward.NewRequestID()
	if err != nil {
		t.Fatal(err)
	}
	req, err := forward.Ask{Session: "child-1", Agent: "Explore", Surface: "bash", Value: "git status", Cwd: "/w"}.Request(id, "s", time.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	req.AccessIntent.AskingUnits = nil
	client := &natsforward.Client{Conn: child, JS: childJS, Owner: "local", Timeout: natsTestWait}
	d := client.Forward(ctx, req)
	f, ok := d.DecidedBy.(provenance.Forwarded)
	if !d.Approved() || !ok || f.ResponderSessionID == nil || *f.ResponderSessionID != "s" || f.Decision == nil || f.Decision.Kind() != provenance.KindRule {
		t.Errorf("the child's answer: %+v, want approved by the broker's rule", d)
	}
	if want := []string{"--transport", b.url, "--nats-user", "local", "--nats-password-file", filepath.Join(b.store, "local.password")}; strings.Join(b.childArgs, " ") != strings.Join(want, " ") {
		t.Errorf("printed %q, want %q", b.childArgs, want)
	}
}

// The generated files: the store 0700, each password file 0600 and the
// server's config 0600, all of the broker's user; the passwords are kept
// across restarts; one that others could read is refused, not used.
func TestEmbeddedServerFiles(t *testing.T) {
	root := t.TempDir()
	b := startEmbeddedBroker(t, root)
	b.stop(t)
	store := b.store
	checkMode(t, store, 0o700, -1)
	for _, name := range []string{"broker.password", "local.password", "server.conf"} {
		checkMode(t, filepath.Join(store, name), 0o600, -1)
	}
	first, err := os.ReadFile(filepath.Join(store, "local.password"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[A-Za-z0-9_-]{43}\n$`).Match(first) {
		t.Errorf("local.password %q: want 32 random bytes, base64url", first)
	}

	again := startEmbeddedBroker(t, root)
	again.stop(t)
	if second, _ := os.ReadFile(filepath.Join(store, "local.password")); string(second) != string(first) {
		t.Error("the password changed across a restart")
	}

	// Each refused, naming the file and what is wrong, and never served
	// with; then put back as it was.
	local := filepath.Join(store, "local.password")
	for _, c := range []struct {
		name     string
		rootOnly bool
		spoil    func() ([]string, error)
		want     string
	}{
		{"readable by others", false, func() ([]string, error) { return nil, os.Chmod(local, 0o644) }, "mode 0644, expected 0600"},
		{"not generated", false, func() ([]string, error) { return nil, os.WriteFile(local, []byte("hunter2\n"), 0o600) }, "not a password the broker generated"},
		{"a symbolic link", false, func() ([]string, error) {
			other := filepath.Join(t.TempDir(), "pw")
			if err := os.WriteFile(other, first, 0o600); err != nil {
				return nil, err
			}
			os.Remove(local)
			return nil, os.Symlink(other, local)
		}, "a symbolic link"},
		{"another user's", true, func() ([]string, error) { return nil, os.Chown(local, 65534, -1) }, "owned by uid 65534"},
		// Outside the root: one inside is refused with the mailbox
		// tree already.
		{"another user's store", true, func() ([]string, error) {
			elsewhere := filepath.Join(t.TempDir(), "store")
			if err := os.Mkdir(elsewhere, 0o700); err != nil {
				return nil, err
			}
			return []string{"--nats-store", elsewhere}, os.Chown(elsewhere, 65534, -1)
		}, "owned by uid 65534"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.rootOnly && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			extra, err := c.spoil()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				os.Remove(local)
				if err := os.WriteFile(local, first, 0o600); err != nil {
					t.Fatal(err)
				}
			})
			var stderr syncBuffer
			stderr.ready = make(chan struct{})
			args := append([]string{"serve", "--session", "s", "--root", root, "--log", "-", "--terminal", "deny", "--nats-listen", "127.0.0.1:0"}, extra...)
			code := run(t.Context(), args, nil, os.Stderr, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), "refusing NATS") || !strings.Contains(stderr.String(), c.want) || strings.Contains(stderr.String(), "serving session") {
				t.Errorf("exit %d, %s; want %d, refused saying %q", code, stderr.String(), exitUsage, c.want)
			}
		})
	}
}

// In the isolation mode the ask group reads local.password (0640, the
// broker's user and the group) through the store (0710), never
// broker.password.
func TestEmbeddedServerFilesIsolation(t *testing.T) {
	gid := os.Getegid()
	if os.Geteuid() == 0 {
		gid = 61000 // root may give the files any group: a real one is checked
	}
	root := filepath.Join(t.TempDir(), "mailbox")
	b := startEmbeddedBroker(t, root, "--ask-group", strconv.Itoa(gid))
	b.stop(t)
	checkMode(t, b.store, 0o710, gid)
	checkMode(t, filepath.Join(b.store, "local.password"), 0o640, gid)
	checkMode(t, filepath.Join(b.store, "broker.password"), 0o600, -1)
	checkMode(t, filepath.Join(b.store, "server.conf"), 0o600, -1)
	checkMode(t, filepath.Join(b.store, "jetstream"), 0o700, -1)
}

// checkMode checks path's permission bits, that the broker's user owns
// it, and its group unless gid is -1.
func checkMode(t *testing.T, path string, mode os.FileMode, gid int) {
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
