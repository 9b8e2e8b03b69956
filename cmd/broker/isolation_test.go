package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
)

// mainEnv makes the test binary the broker command: a test runs it as
// another user, as an operator runs broker serve.
const mainEnv = "COURIER_TEST_BROKER_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(broker())
	}
	os.Exit(m.Run())
}

func TestCheckMember(t *testing.T) {
	tests := []struct {
		name            string
		gid, euid, egid int
		groups          []int
		want            string // "" admits
	}{
		{"root is in every group's place", 61000, 0, 0, nil, ""},
		{"its primary group", 61000, 1000, 61000, nil, ""},
		{"a supplementary group", 61000, 1000, 1000, []int{27, 61000}, ""},
		{"not a member", 61000, 1000, 1000, []int{27}, "is not a member of group courier-ask (gid 61000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkMember("courier-ask", "courier-ask", tt.gid, tt.euid, tt.egid, tt.groups)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), "usermod -aG courier-ask"):
				t.Errorf("%v: does not say what to do", err)
			}
		})
	}
}

// A broker whose user is not in the ask group cannot give the mailbox
// that group: broker serve refuses to start, saying so and what to do,
// before it touches the tree. Run as nobody, a user of no group but its
// own.
func TestServeAskGroupTheBrokerIsNotIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("running the broker as another user needs root (CI runs this as root)")
	}
	bin := publicCopyOfThisBinary(t)
	root := filepath.Join(t.TempDir(), "mailbox")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--session", "s", "--ask-group", "61000", "--root", root, "--log", "-", "--terminal", "deny")
	cmd.Env = append(os.Environ(), mainEnv+"=1", "HOME=/nonexistent")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
		t.Fatalf("broker serve as nobody with --ask-group 61000: %v, want exit %d; stderr:\n%s", err, exitUsage, stderr.String())
	}
	for _, want := range []string{"--ask-group 61000: the broker's user (uid 65534 (nobody)) is not a member of group 61000 (gid 61000)", "usermod -aG 61000 nobody"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	if _, err := os.Lstat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused broker created its root: %v", err)
	}
}

// broker serve --ask-group as the broker's user: the startup line says
// the mode, and the tree gets the mode's owners and modes.
func TestServeAskGroupPreparesTheTree(t *testing.T) {
	root := filepath.Join(t.TempDir(), "mailbox")
	gid := os.Getegid()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stderr := &syncBuffer{ready: make(chan struct{})}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--session", "s", "--ask-group", strconv.Itoa(gid), "--root", root, "--log", "-", "--terminal", "deny"}, nil, io.Discard, stderr)
	}()
	select {
	case <-stderr.ready:
	case code := <-done:
		t.Fatalf("broker serve exited %d:\n%s", code, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("broker serve did not start within 20s:\n%s", stderr.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d:\n%s", code, stderr.String())
	}
	want := "broker: isolation: broker uid " + strconv.Itoa(os.Geteuid()) + ", ask group "
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("no line saying the mode (%q):\n%s", want, stderr.String())
	}
	layout := mailbox.Layout{Root: root}
	requests, _ := layout.RequestsDir("s")
	for dir, mode := range map[string]os.FileMode{root: 0o750, requests: 0o730 | os.ModeSticky, layout.StateDir(): 0o711} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (os.ModePerm | os.ModeSticky); got != mode {
			t.Errorf("%s: mode %v, want %v", dir, got, mode)
		}
	}
}

// broker grants list|revoke --vouched-uid: the grants the broker vouched
// for a child of that user, in its session.
func TestGrantsVouchedUID(t *testing.T) {
	root := t.TempDir()
	layout := mailbox.Layout{Root: root, Isolation: &mailbox.Isolation{BrokerUID: os.Geteuid(), GID: os.Getegid()}}
	if err := layout.PrepareIsolated(); err != nil {
		t.Fatal(err)
	}
	j, err := grants.OpenVouched(layout, 61002, "child")
	if err != nil {
		t.Fatal(err)
	}
	asked := grants.Asked{RequestID: "perm-1-abcdef", Surface: "bash", Value: "npm test", Agent: "Explore", At: time.Now(), DecidedBy: provenance.User{Via: provenance.ViaDialog}}
	if _, err := j.Vouch(rules.WidthProven, []rules.SessionGrant{{Surface: "bash", Pattern: "npm test *"}, {Surface: "bash", Pattern: "make *"}}, asked); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"grants", "list", "--root", root, "--vouched-uid", "61002", "--session", "child"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), `2 vouched this-subagent-only grants of session "child"`) || !strings.Contains(out.String(), `"make *"`) {
		t.Errorf("list:\n%s", out.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"grants", "revoke", "--root", root, "--vouched-uid", "61002", "--session", "child", "make *"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("revoke: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), `revoked bash "make *"`) {
		t.Errorf("revoke:\n%s", out.String())
	}
	fi, err := os.Stat(j.Path())
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("after revoke the journal is %v, %v; want mode 0644", fi, err)
	}
}

// publicCopyOfThisBinary copies the test binary where another user can
// run it.
func publicCopyOfThisBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "broker")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// syncBuffer is stderr for a broker running on another goroutine; ready
// is closed once the startup line ("serving session") is written.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	once  bool
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.buf.Write(p)
	if !s.once && strings.Contains(s.buf.String(), "serving session") {
		s.once = true
		close(s.ready)
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
