package confine

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// The test binary is the init too (Probe and the tests re-execute it).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		os.Exit(Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestMainProbeAndUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"--probe"}, &out, &errOut); code != 0 || strings.TrimSpace(out.String()) != probeLine {
		t.Errorf("--probe: %d %q %q", code, out.String(), errOut.String())
	}
	errOut.Reset()
	if code := Main([]string{"--", "/bin/true"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage") {
		t.Errorf("without --rw: %d %q, want 2 and the usage", code, errOut.String())
	}
}

func TestWrap(t *testing.T) {
	argv := []string{"/opt/authz", "--deny", "x"}
	if _, _, _, ok := (*Plan)(nil).Wrap(argv, "/tmp/p", false); ok {
		t.Error("the nil plan confines")
	}
	if _, _, _, ok := (&Plan{nsFlags: cloneNewPID, landlock: 7}).Wrap(argv, "/tmp/p", false); ok {
		t.Error("a plan whose init does not run confines")
	}
	p := &Plan{nsFlags: cloneNewPID | cloneNewNet, userns: true, landlock: 7, initOK: true}
	for _, network := range []bool{false, true} {
		path, args, attr, ok := p.Wrap(argv, "/tmp/p", network)
		if !ok || path != selfExe {
			t.Fatalf("network %v: %q %v", network, path, ok)
		}
		want := []string{selfExe, Command, "--rw", "/tmp/p"}
		if network {
			want = append(want, "--network")
		}
		want = append(append(want, "--"), argv...)
		if !slices.Equal(args, want) {
			t.Errorf("network %v: args %q, want %q", network, args, want)
		}
		if attr.Pdeathsig != syscall.SIGKILL || !attr.Setpgid || attr.Cloneflags&(cloneNewPID|cloneNewUser) != cloneNewPID|cloneNewUser {
			t.Errorf("network %v: attr %+v", network, attr)
		}
		if got := attr.Cloneflags&cloneNewNet != 0; got == network {
			t.Errorf("network %v: a network namespace %v", network, got)
		}
		if len(attr.UidMappings) != 1 || attr.UidMappings[0].HostID != os.Geteuid() || attr.UidMappings[0].ContainerID != os.Geteuid() {
			t.Errorf("uid mappings %+v: want this user mapped to itself", attr.UidMappings)
		}
	}
}

func TestLandlockMissingNamesEach(t *testing.T) {
	names := func(abi int) []string {
		var out []string
		for _, m := range landlockMissing(abi, "why") {
			out = append(out, m.Name)
		}
		return out
	}
	for abi, want := range map[int][]string{
		0: {"landlock filesystem", "landlock network", "landlock scopes"},
		3: {"landlock network", "landlock scopes"},
		5: {"landlock scopes"},
		6: nil,
	} {
		if got := names(abi); !slices.Equal(got, want) {
			t.Errorf("ABI %d: missing %q, want %q", abi, got, want)
		}
	}
}

// The init confines in both of its modes: as process 1 of a PID namespace
// (it starts the plugin and reaps) and without one (it executes the
// plugin in its own place). Either way the plugin, here cat, reads its
// private directory and system files, and nothing of the broker's user.
func TestInitConfinesTheProgramItRuns(t *testing.T) {
	plan := Probe(t.Context())
	for _, m := range plan.Missing {
		if m.Name == "landlock filesystem" || m.Name == "plugin init" {
			t.Skipf("no %s here: %s", m.Name, m.Why)
		}
	}
	private := t.TempDir()
	secretDir := t.TempDir()
	mine := filepath.Join(private, "mine")
	secret := filepath.Join(secretDir, "secret")
	for _, f := range []string{mine, secret} {
		if err := os.WriteFile(f, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := os.Open("/bin/cat")
	if err != nil {
		t.Skip(err)
	}
	defer cat.Close()
	modes := []struct {
		name  string
		flags uintptr
	}{{"exec", 0}}
	if plan.nsFlags&cloneNewPID != 0 {
		modes = append(modes, struct {
			name  string
			flags uintptr
		}{"pid namespace", plan.nsFlags})
	}
	for _, mode := range modes {
		for _, tc := range []struct {
			file string
			ok   bool
		}{{mine, true}, {"/etc/passwd", true}, {secret, false}, {"/proc/1/environ", false}} {
			t.Run(mode.name+" "+tc.file, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
				defer cancel()
				cmd := exec.CommandContext(ctx, selfExe, Command, "--rw", private, "--", "cat", tc.file)
				cmd.SysProcAttr = nsAttr(mode.flags, plan.userns && mode.flags != 0)
				cmd.ExtraFiles = []*os.File{cat}
				out, err := cmd.CombinedOutput()
				if ok := err == nil; ok != tc.ok {
					t.Errorf("cat %s: %v %s, want ok %v", tc.file, err, out, tc.ok)
				}
				if !tc.ok && !strings.Contains(string(out), "Permission denied") {
					t.Errorf("cat %s: %s, want Permission denied", tc.file, out)
				}
			})
		}
	}
}

// An fd the broker inherited without close-on-exec (a supervisor's leak,
// an operator's 20</some/file) must not reach the plugin: Landlock checks
// opens by path, not reads of an fd already open, so an inherited fd to
// the mailbox or the review log would defeat it. The init marks every fd
// past the plugin's binary close-on-exec before it starts the plugin.
func TestInitPassesNoInheritedFd(t *testing.T) {
	plan := Probe(t.Context())
	for _, m := range plan.Missing {
		if m.Name == "landlock filesystem" || m.Name == "plugin init" {
			t.Skipf("no %s here: %s", m.Name, m.Why)
		}
	}
	bash, err := os.Open("/bin/bash")
	if err != nil {
		t.Skip(err)
	}
	defer bash.Close()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("leaked\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Dup2 clears close-on-exec: fd 40 is what an inherited fd looks like.
	const leaked = 40
	if err := syscall.Dup2(int(f.Fd()), leaked); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(leaked)
	modes := []struct {
		name  string
		flags uintptr
	}{{"exec", 0}}
	if plan.nsFlags&cloneNewPID != 0 {
		modes = append(modes, struct {
			name  string
			flags uintptr
		}{"pid namespace", plan.nsFlags})
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, selfExe, Command, "--rw", t.TempDir(), "--",
				"bash", "-c", "cat <&40 && echo READ || echo closed")
			cmd.SysProcAttr = nsAttr(mode.flags, plan.userns && mode.flags != 0)
			cmd.ExtraFiles = []*os.File{bash}
			out, _ := cmd.CombinedOutput()
			if strings.Contains(string(out), "leaked") || !strings.Contains(string(out), "closed") {
				t.Errorf("the plugin read the inherited fd: %s", out)
			}
		})
	}
}
