package plugins

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/rules"
)

// hostileSpec is a link on the hostile plugin with the given flags.
func hostileSpec(t *testing.T, name string, args ...string) rules.AuthorizerLink {
	t.Helper()
	s := spec(name, args...)
	s.Path, s.SHA256 = hostileBin, fileSum(hostileBin)
	return s
}

// needConfinement skips where this machine gives plugins none of what
// the test checks (the broker says so at start; see confine.Probe).
func needConfinement(t *testing.T, names ...string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("plugin confinement is Linux only")
	}
	for _, m := range testPlan.Missing {
		for _, n := range names {
			if m.Name == n || m.Name == "plugin init" {
				t.Skipf("this machine gives plugins no %s: %s", n, m.Why)
			}
		}
	}
}

// The issue-18 attack: a plugin reads what the broker's user can read
// (the mailbox, the agent directory, the home directory), the broker's
// working directory through /proc, plants an answer in the mailbox's
// responses/, and reaches the network. Unconfined it
// gets all of them (the control: the test would catch a probe that
// cannot see); confined, every one is refused, and only a link that
// declared "network" connects.
func TestConfinedPluginCannotReadTheBrokersFiles(t *testing.T) {
	needConfinement(t, "landlock filesystem", "network namespace")
	base := t.TempDir()
	mailbox := filepath.Join(base, "sessions", "permission-forwarding")
	agent := filepath.Join(base, "agent")
	responses := filepath.Join(mailbox, "parent", "responses")
	for _, d := range []string{filepath.Join(mailbox, "parent", "requests"), responses, agent} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	answer := filepath.Join(mailbox, "parent", "requests", "req-1.json")
	settings := filepath.Join(agent, "settings.json")
	for _, f := range []string{answer, settings} {
		if err := os.WriteFile(f, []byte(`{"secret": true}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	broker := strconv.Itoa(os.Getpid()) // this process hosts the plugins
	args := []string{"--helpers=false", "--read", mailbox, "--read", answer, "--read", agent, "--read", settings,
		"--read", home, "--proc", broker, "--write", responses, "--connect", ln.Addr().String()}
	netLink := hostileSpec(t, "net", args...)
	netLink.Network = true

	probe := func(h *harness, i int) map[string]string {
		t.Helper()
		v, err := h.member(i).Authorize(t.Context(), authorizer.Evidence{Value: "probe"})
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		got := map[string]string{}
		if err := json.Unmarshal([]byte(v.Reason), &got); err != nil {
			t.Fatalf("probe reason %q: %v", v.Reason, err)
		}
		if len(got) != 5+3+1+1 {
			t.Fatalf("probe tried %d targets, want 10: %v", len(got), got)
		}
		return got
	}

	unconfined := loadPlan(t, nil, Options{}, hostileSpec(t, "h", args...))
	for target, res := range probe(unconfined, 0) {
		if !strings.HasPrefix(res, "ok") {
			t.Errorf("control: an unconfined plugin could not %s (%s): the probe proves nothing", target, res)
		}
	}

	// The control planted files; the confined plugins must add none.
	planted, err := filepath.Glob(filepath.Join(responses, "planted-*"))
	if err != nil || len(planted) == 0 {
		t.Fatalf("control: no file planted in %s (%v): the probe proves nothing", responses, err)
	}
	for _, p := range planted {
		os.Remove(p)
	}

	h := load(t, Options{}, hostileSpec(t, "h", args...), netLink)
	for target, res := range probe(h, 0) {
		if !strings.HasPrefix(res, "refused") {
			t.Errorf("a confined plugin could %s: %s", target, res)
		}
	}
	if planted, _ := filepath.Glob(filepath.Join(responses, "planted-*")); len(planted) > 0 {
		t.Errorf("a confined plugin planted %v", planted)
	}
	for target, res := range probe(h, 1) {
		if wantOK := strings.HasPrefix(target, "connect"); strings.HasPrefix(res, "ok") != wantOK {
			t.Errorf("with network declared, %s: %s (want ok only for the connect)", target, res)
		}
	}
}
