// Package integration runs courier's real binaries end to end: the
// binaries are built once per run, and testscript scripts under testdata/
// drive them as a user would. The test binary doubles as a scripted pi
// parent (fakeparent) for the child's scripts.
package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(removingBinaries{m}, map[string]func(){
		"fakeparent": fakeParentMain,
		"tmuxrun":    tmuxRunMain,
	})
}

// removingBinaries removes the built binaries once every test has run, not
// when the first TestScripts ends: with -count=N the later runs use them too.
type removingBinaries struct{ m *testing.M }

func (r removingBinaries) Run() int {
	code := r.m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
	buildOut  []byte
)

// buildBinaries builds cmd/... once into a directory that lives as long
// as the test process.
func buildBinaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "courier-integration-bin-")
		if buildErr != nil {
			return
		}
		_, self, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", binDir+string(filepath.Separator), "./cmd/...")
		cmd.Dir = filepath.Dir(filepath.Dir(self))
		buildOut, buildErr = cmd.CombinedOutput()
		if buildErr != nil {
			return
		}
		// The child as `make build` builds it: without cgo (decision 0021).
		cmd = exec.Command("go", "build", "-o", binDir+string(filepath.Separator), "./cmd/child")
		cmd.Dir = filepath.Dir(filepath.Dir(self))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("building the binaries: %v\n%s", buildErr, buildOut)
	}
	return binDir
}

// TestScripts runs every testdata/*.txtar script with the built broker and
// child first on PATH and a mailbox root of the script's own.
func TestScripts(t *testing.T) {
	bin := buildBinaries(t)
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("PI_CODING_AGENT_DIR", filepath.Join(env.WorkDir, "agent"))
			env.Setenv("ROOT", filepath.Join(env.WorkDir, "agent", "sessions", "permission-forwarding"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"nomail":    cmdNoMail,
			"exits":     cmdExits,
			"drop":      cmdDrop,
			"dropmany":  cmdDropMany,
			"waitfile":  cmdWaitFile,
			"waitcount": cmdWaitCount,
			"waitgrep":  cmdWaitGrep,
			"askmany":   cmdAskMany,
			// The operator's prompt in a real terminal (tmux_test.go).
			"tmux-start": cmdTmuxStart,
			"tmux-wait":  cmdTmuxWait,
			"tmux-send":  cmdTmuxSend,
			"tmux-exit":  cmdTmuxExit,
		},
	})
}

// cmdNoMail asserts that a directory holds no *.json file (or does not
// exist): "nomail DIR". With !, it asserts that it holds at least one.
func cmdNoMail(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: nomail DIR")
	}
	entries, err := os.ReadDir(ts.MkAbs(args[0]))
	if err != nil && !os.IsNotExist(err) {
		ts.Fatalf("%v", err)
	}
	var mail []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			mail = append(mail, e.Name())
		}
	}
	if neg && len(mail) == 0 {
		ts.Fatalf("%s holds no mail", args[0])
	}
	if !neg && len(mail) > 0 {
		ts.Fatalf("%s still holds %v", args[0], mail)
	}
}

// cmdExits runs a command and asserts its exact exit status, keeping its
// stdout and stderr for the assertions that follow: "exits N prog args...".
// testscript's own "! exec" only says the status was not zero, and the
// child's statuses (1 denied, 3 unavailable) are part of its contract.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %q is not a status", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			ts.Fatalf("exits: %v", err)
		}
		got = exit.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
