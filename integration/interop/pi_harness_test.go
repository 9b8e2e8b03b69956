package interop

// The harness of the pi suite (pi_test.go): the published
// pi-permission-system's forwarding code, run by a driver of ours
// (testdata/pi-forwarding-driver.mjs) under the pinned tsx, as a child
// asking courier's broker or as a parent serving courier's child.

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The environment `make interop` sets for the pi suite.
const (
	// EnvPi is the npm prefix pi-permission-system is installed under.
	EnvPi = "COURIER_INTEROP_PI"
	// EnvTsx is the npm prefix tsx (the TypeScript loader) is installed under.
	EnvTsx = "COURIER_INTEROP_TSX"
)

// PiVersion is the release of pi-permission-system the suite runs
// (PI_PERMISSION_VERSION in the Makefile).
const PiVersion = "20.7.3"

// PiTimeout bounds one run of the driver: node's start and tsx's transform
// of pi's modules take about a second; pi's own poll is 250 ms.
const PiTimeout = 60 * time.Second

var update = flag.Bool("update", false, "rewrite the pi goldens under testdata/pi-20.7.3/")

// PiTools are the installed pi package, tsx and the driver.
type PiTools struct {
	Tools
	// Pkg is the installed package's directory (its src/ is what runs).
	Pkg string
	// Tsx is the tsx executable.
	Tsx string
	// Testdata is this package's testdata directory.
	Testdata string
}

// RequirePi is the gate of the pi tests. Without the pinned install it
// skips, so `go test ./...` needs no npm. It does not ask for the network
// namespace Require insists on: nothing here calls a model or the network,
// pi's code and courier's only read and write files under the case's
// mailbox root (`make interop` runs it inside the namespace all the same).
func RequirePi(t *testing.T) PiTools {
	t.Helper()
	prefix, tsxPrefix := os.Getenv(EnvPi), os.Getenv(EnvTsx)
	if prefix == "" || tsxPrefix == "" {
		t.Skipf("the pi interop tests run pi-permission-system %s from npm: run `make interop` (or `make interop-pi-deps build` and set %s, %s and %s)", PiVersion, EnvPi, EnvTsx, EnvBin)
	}
	p := PiTools{
		Pkg: filepath.Join(prefix, "node_modules", "@gotgenes", "pi-permission-system"),
		Tsx: filepath.Join(tsxPrefix, "node_modules", ".bin", "tsx"),
	}
	data, err := os.ReadFile(filepath.Join(p.Pkg, "package.json"))
	if err != nil {
		t.Skipf("pi-permission-system is not installed under %s (make interop-pi-deps): %v", prefix, err)
	}
	var meta struct{ Version string }
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatalf("reading %s/package.json: %v", p.Pkg, err)
	}
	if meta.Version != PiVersion {
		t.Fatalf("%s holds pi-permission-system %q, want the pinned %s (make interop-pi-deps)", p.Pkg, meta.Version, PiVersion)
	}
	if _, err := os.Stat(p.Tsx); err != nil {
		t.Skipf("tsx is not installed under %s (make interop-pi-deps): %v", tsxPrefix, err)
	}
	p.Bin = os.Getenv(EnvBin)
	if p.Bin == "" {
		t.Fatalf("interop: %s is not set: the directory of the built broker and child", EnvBin)
	}
	p.Broker, p.Child = filepath.Join(p.Bin, "broker"), filepath.Join(p.Bin, "child")
	for _, f := range []string{p.Broker, p.Child} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("interop: %v (make build)", err)
		}
	}
	p.Testdata = testdataDir(t)
	return p
}

// testdataDir finds testdata/ whether the test runs in its package
// directory (go test) or from the repository (bin/interop.test).
func testdataDir(t *testing.T) string {
	if _, err := os.Stat(filepath.Join("testdata", "pi-forwarding-driver.mjs")); err == nil {
		abs, err := filepath.Abs("testdata")
		if err != nil {
			t.Fatalf("testdata: %v", err)
		}
		return abs
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate testdata/: no caller information")
	}
	return filepath.Join(filepath.Dir(file), "testdata")
}

// Driver is the command line of the driver in mode (child or parent) on
// the case's mailbox root, its pi logs under the case directory.
func (p PiTools) Driver(c *Case, mode, session string, env []string, args ...string) *exec.Cmd {
	logs := filepath.Join(c.Dir, "pi-logs-"+mode+"-"+session)
	all := append([]string{filepath.Join(p.Testdata, "pi-forwarding-driver.mjs"), mode,
		"--pkg", p.Pkg, "--root", c.Root, "--session", session, "--logs", logs}, args...)
	cmd := exec.Command(p.Tsx, all...)
	cmd.Dir = c.Dir
	cmd.Env = c.Env(env...)
	return cmd
}

// Proc is a command running in the background, its output in log files of
// the case.
type Proc struct {
	c       *Case
	name    string
	cmd     *exec.Cmd
	outPath string
	done    chan struct{}
	err     error
}

// Start starts cmd in its own process group; it is killed when the test
// ends, if still running.
func (c *Case) Start(name string, cmd *exec.Cmd) *Proc {
	c.T.Helper()
	p := &Proc{c: c, name: name, cmd: cmd, outPath: c.LogPath(name + ".stdout"), done: make(chan struct{})}
	out, err := os.Create(p.outPath)
	if err != nil {
		c.T.Fatalf("creating %s: %v", p.outPath, err)
	}
	errOut, err := os.Create(c.LogPath(name + ".stderr"))
	if err != nil {
		c.T.Fatalf("creating the stderr log of %s: %v", name, err)
	}
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		c.T.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		errOut.Close()
		close(p.done)
	}()
	c.T.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// Wait waits (up to timeout) for the process to exit and returns its exit
// status and stdout.
func (p *Proc) Wait(timeout time.Duration) (int, []byte) {
	p.c.T.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		p.c.T.Fatalf("%s did not exit within %s; killed", p.name, timeout)
	}
	out, err := os.ReadFile(p.outPath)
	if err != nil {
		p.c.T.Fatalf("reading %s: %v", p.outPath, err)
	}
	if p.err == nil {
		return 0, out
	}
	if exit, ok := p.err.(*exec.ExitError); ok {
		return exit.ExitCode(), out
	}
	p.c.T.Fatalf("%s: %v", p.name, p.err)
	return -1, nil
}

// WaitRequest waits (up to timeout) for a request file in the inbox of
// session (a name ending .json: pi's and courier's temp files end .tmp)
// and returns its path and bytes.
func (c *Case) WaitRequest(session string, timeout time.Duration) (string, []byte) {
	c.T.Helper()
	dir := filepath.Join(c.Root, "sessions", session, "requests")
	deadline := time.Now().Add(timeout)
	for {
		names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		sort.Strings(names)
		if len(names) > 0 {
			data, err := os.ReadFile(names[0])
			if err == nil {
				return names[0], data
			}
		}
		if time.Now().After(deadline) {
			c.T.Fatalf("no request in %s after %s", dir, timeout)
		}
		time.Sleep(pollEvery)
	}
}

// volatile are the fields of pi's files that differ on every run: ids
// minted from the clock and pid, and the times.
var volatile = regexp.MustCompile(`"(id|createdAt|respondedAt)":("[^"]*"|[0-9]+)`)

// normalize replaces the volatile fields' values, keeping every other byte
// (field order and spacing included).
func normalize(data []byte) []byte {
	return volatile.ReplaceAllFunc(data, func(m []byte) []byte {
		key := string(m[:strings.IndexByte(string(m), ':')])
		return []byte(key + `:"<` + strings.Trim(key, `"`) + `>"`)
	})
}

// Golden compares data, normalized, with testdata/pi-20.7.3/name (or
// rewrites it under -update). The case directory, which pi's messages may
// name (the working directory), is written <case>.
func (p PiTools) Golden(t *testing.T, name string, data []byte, caseDir string) {
	t.Helper()
	path := filepath.Join(p.Testdata, "pi-"+PiVersion, name)
	got := append(normalize([]byte(strings.ReplaceAll(string(data), caseDir, "<case>"))), '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("writing %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden (go test -update rewrites it): %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from what pi wrote:\n got: %s\nwant: %s", path, bytes.TrimSpace(got), bytes.TrimSpace(want))
	}
}

// decodeLine decodes the one JSON object a driver run printed.
func decodeLine(t *testing.T, out []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("the driver printed %q: %v", out, err)
	}
}

// piChildResult is what the driver's child mode prints: the outcome of
// pi's gate (what the agent is told) and the decision pi's authorizer
// returned (the response as pi's child parsed it).
type piChildResult struct {
	Outcome struct {
		Action string `json:"action"`
		Reason string `json:"reason"`
	} `json:"outcome"`
	Decision *struct {
		Approved           bool    `json:"approved"`
		State              string  `json:"state"`
		DenialReason       *string `json:"denialReason"`
		ResponderSessionID string  `json:"responderSessionId"`
		// ConfirmationUnavailable marks pi's DenyingAuthorizer's denial
		// (no UI, not a subagent): never on the wire in 20.7.3.
		ConfirmationUnavailable bool `json:"confirmationUnavailable"`
	} `json:"decision"`
}

func (r piChildResult) String() string {
	b, _ := json.Marshal(r)
	return string(b)
}
