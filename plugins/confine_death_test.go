package plugins

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// treeGoneWithin is the bound of issue 18: every process of a plugin's
// tree is gone within a second of the broker's death or stop.
const treeGoneWithin = time.Second

// testBroker is the broker binary the death tests run:
// $COURIER_TEST_BROKER when set (to run them against another build, such
// as the one before confinement), else cmd/broker built by TestMain.
func testBroker() string {
	if b := os.Getenv("COURIER_TEST_BROKER"); b != "" {
		return b
	}
	return brokerBin
}

// treeProc is one process of the hostile tree, found by its command line.
type treeProc struct {
	pid  int
	role string // init, plugin, child, grandchild
}

// findTree lists the processes whose command line holds token.
func findTree(token string) []treeProc {
	entries, _ := os.ReadDir("/proc")
	var out []treeProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(token)) {
			continue
		}
		args := bytes.Split(cmdline, []byte{0})
		role := "plugin"
		for i, a := range args {
			switch {
			case string(a) == "plugin-init":
				role = "init"
			case string(a) == "--role" && i+1 < len(args) && role != "init":
				role = string(args[i+1])
			}
		}
		out = append(out, treeProc{pid, role})
	}
	return out
}

// The issue-18 attack: a plugin that clears its parent-death signal and
// starts setsid helpers that clear theirs outlived a broker killed with
// SIGKILL, and its grandchild outlived SIGTERM. Here a real broker serves
// the hostile plugin; once its child and grandchild run, the broker is
// killed (or stopped), and every process of the tree must be gone within
// a second.
func TestHostilePluginTreeDiesWithTheBroker(t *testing.T) {
	needConfinement(t, "pid namespace")
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			// Short: the plugin's socket directory goes under it (see
			// maxTempDirLen), and the test removes it.
			dir, err := os.MkdirTemp("", "courier-h")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			token := fmt.Sprintf("hostile-tree-%d-%d", os.Getpid(), int(sig))
			root := filepath.Join(dir, "root")
			config := filepath.Join(dir, "config.json")
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			body := fmt.Sprintf(`{"permission": {}, "authorizerChain": [
  {"name": "hostile", "path": %q, "sha256": %q, "args": ["--token", %q]}]}`, hostileBin, fileSum(hostileBin), token)
			if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			broker := exec.Command(testBroker(), "serve", "--session", "s", "--root", root,
				"--config", config, "--terminal", "deny", "--log", "-")
			broker.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir,
				"PI_CODING_AGENT_DIR=" + filepath.Join(dir, "agent")}
			stderr := &syncBuffer{}
			broker.Stderr = stderr
			if err := broker.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { broker.Wait(); close(exited) }()
			t.Cleanup(func() {
				broker.Process.Kill()
				<-exited
				// Whatever survived a failure must not outlive the test.
				for _, p := range findTree(token) {
					syscall.Kill(p.pid, syscall.SIGKILL)
				}
			})

			var tree []treeProc
			roles := map[string]bool{}
			deadline := time.Now().Add(30 * time.Second)
			for !(roles["plugin"] && roles["child"] && roles["grandchild"]) {
				if time.Now().After(deadline) {
					t.Fatalf("the hostile tree did not start within 30s (found %v); broker stderr:\n%s", tree, stderr)
				}
				time.Sleep(20 * time.Millisecond)
				tree = findTree(token)
				roles = map[string]bool{}
				for _, p := range tree {
					roles[p.role] = true
				}
			}
			// pidfds from now on: a pid reused later is not ours.
			fds := map[treeProc]int{}
			for _, p := range tree {
				if fd, err := pidfdOpen(p.pid); err == nil {
					fds[p] = fd
				}
			}
			defer closeAll(fds)

			start := time.Now()
			if err := broker.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				t.Fatalf("the broker did not exit within 20s of %v", sig)
			}
			brokerGone := time.Since(start)
			var last time.Duration
			for p, fd := range fds {
				if !pidfdExited(t, fd, time.Until(start.Add(brokerGone+treeGoneWithin))) {
					t.Errorf("%s %d of the plugin's tree is alive %v after the broker's %v (the broker exited after %v)",
						p.role, p.pid, time.Since(start).Round(time.Millisecond), sig, brokerGone.Round(time.Millisecond))
					continue
				}
				last = max(last, time.Since(start))
			}
			t.Logf("%v: broker exited after %v; the %d processes of the plugin's tree (%v) gone %v after the signal",
				sig, brokerGone.Round(time.Millisecond), len(fds), tree, last.Round(time.Millisecond))
		})
	}
}

func pidfdOpen(pid int) (int, error) { return unix.PidfdOpen(pid, 0) }

// pidfdExited waits up to within for the process behind fd to exit.
func pidfdExited(t *testing.T, fd int, within time.Duration) bool {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(max(within, 0).Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
}

func closeAll(fds map[treeProc]int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
