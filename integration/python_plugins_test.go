package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The python_*.txtar scripts of testdata/plugins run authorizer plugins
// written in Python (plugins/examples/python-denylist) as links of a real
// broker. They need Debian's Python and packages, which `make test-deps`
// installs at pinned versions; a script starts with
//
//	[!python] skip $PYTHON_MISSING
//
// so that a machine without them says what is missing. The command
//
//	pyplugin VAR OUT [MAIN.py]
//
// builds a plugin with the example's build.py (MAIN.py as its main module,
// default the deny-list) into OUT and sets $VAR to its absolute path and
// $VAR_SHA256 to its sum, for expand.

// pythonInterpreter is the interpreter the plugins' shebang names. A
// Python under the home directory (pyenv) cannot run as a confined plugin,
// so this is the one the test checks, whatever PATH finds first.
const pythonInterpreter = "/usr/bin/python3"

// pythonDeps is what the scripts need, as `make test-deps` installs it.
const pythonDeps = "Debian's python3-grpcio, python3-protobuf, python3-cryptography, protobuf-compiler and protobuf-compiler-grpc (make test-deps installs them)"

var (
	pythonOnce    sync.Once
	pythonMissing string
)

// pythonEnvMissing says why the Python plugins cannot be built or run on
// this machine, or "" when they can. It is checked once per test process.
func pythonEnvMissing() string {
	pythonOnce.Do(func() {
		pythonMissing = checkPythonEnv()
		if pythonMissing != "" {
			pythonMissing = "python plugins: " + pythonMissing + "; needs " + pythonDeps
		}
	})
	return pythonMissing
}

func checkPythonEnv() string {
	if _, err := os.Stat(pythonInterpreter); err != nil {
		return fmt.Sprintf("no %s (%v)", pythonInterpreter, err)
	}
	for _, tool := range []string{"protoc", "grpc_python_plugin"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("no %s on PATH", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, pythonInterpreter, "-I", "-c",
		"import grpc, google.protobuf, cryptography").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s cannot import grpc, google.protobuf and cryptography: %v: %s",
			pythonInterpreter, err, strings.TrimSpace(string(out)))
	}
	return ""
}

// pythonCondition is the scripts' [python] condition.
func pythonCondition(cond string) (bool, error) {
	if cond != "python" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	return pythonEnvMissing() == "", nil
}

// pythonExampleDir is plugins/examples/python-denylist in this checkout.
func pythonExampleDir() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(filepath.Dir(self)), "plugins", "examples", "python-denylist")
}

// cmdPyPlugin builds a Python plugin: "pyplugin VAR OUT [MAIN.py]".
func cmdPyPlugin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: pyplugin VAR OUT [MAIN.py]")
	}
	if why := pythonEnvMissing(); why != "" {
		ts.Fatalf("%s (guard the script with [!python] skip)", why)
	}
	out := ts.MkAbs(args[1])
	build := []string{"-I", filepath.Join(pythonExampleDir(), "build.py"), "--out", out}
	if len(args) == 3 {
		build = append(build, "--main", ts.MkAbs(args[2]))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, pythonInterpreter, build...)
	if b, err := cmd.CombinedOutput(); err != nil {
		ts.Fatalf("build.py: %v\n%s", err, b)
	}
	data, err := os.ReadFile(out)
	ts.Check(err)
	sum := sha256.Sum256(data)
	ts.Setenv(args[0], out)
	ts.Setenv(args[0]+"_SHA256", hex.EncodeToString(sum[:]))
}

// TestPythonDenylistUnits runs the Python deny-list's unit tests
// (plugins/examples/python-denylist/test_denylist.py) against the plugin
// build.py builds: rules, flags, the values judged, allow, the handshake's
// environment checks and certificate.
func TestPythonDenylistUnits(t *testing.T) {
	if why := pythonEnvMissing(); why != "" {
		t.Skip(why)
	}
	pyz := filepath.Join(t.TempDir(), "denylist.pyz")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := pythonExampleDir()
	if out, err := exec.CommandContext(ctx, pythonInterpreter, "-I", filepath.Join(dir, "build.py"), "--out", pyz).CombinedOutput(); err != nil {
		t.Fatalf("build.py: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(ctx, pythonInterpreter, "-I", filepath.Join(dir, "test_denylist.py"), pyz, "-v").CombinedOutput()
	if err != nil {
		t.Fatalf("test_denylist.py: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
