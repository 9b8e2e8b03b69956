package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestPluginScripts runs testdata/plugins/*.txtar: broker serve with real
// authorizer plugins (the example plugins and the misbehaving testauthz
// of package plugins). Each script writes its config from a template with
// "expand", which fills in the plugin paths and their sha256:
//
//	$AUTHZ_TEST, $AUTHZ_TEST_SHA256          plugins/testdata/plugins/testauthz
//	$AUTHZ_DENYLIST, $AUTHZ_DENYLIST_SHA256  cmd/courier-authz-denylist
//	$AUTHZ_READONLY, $AUTHZ_READONLY_SHA256  cmd/courier-authz-readonly
//
// The python_*.txtar scripts build Python plugins with pyplugin and skip
// under [!python] (python_plugins_test.go).
func TestPluginScripts(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(self))
	bin := t.TempDir()
	for _, pkg := range []string{"./cmd/...", "./plugins/testdata/plugins/testauthz"} {
		if out, err := goCmd(root, "build", "-o", bin+string(filepath.Separator), pkg); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	plugins := map[string]string{
		"AUTHZ_TEST":     filepath.Join(bin, "testauthz"),
		"AUTHZ_DENYLIST": filepath.Join(bin, "courier-authz-denylist"),
		"AUTHZ_READONLY": filepath.Join(bin, "courier-authz-readonly"),
	}
	sums := map[string]string{}
	for name, path := range plugins {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(data)
		sums[name+"_SHA256"] = hex.EncodeToString(s[:])
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "plugins"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("PI_CODING_AGENT_DIR", filepath.Join(env.WorkDir, "agent"))
			env.Setenv("ROOT", filepath.Join(env.WorkDir, "agent", "sessions", "permission-forwarding"))
			for k, v := range plugins {
				env.Setenv(k, v)
			}
			for k, v := range sums {
				env.Setenv(k, v)
			}
			// What python_*.txtar skip with (python_plugins_test.go).
			env.Setenv("PYTHON_MISSING", pythonEnvMissing())
			return nil
		},
		Condition: pythonCondition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"nomail":    cmdNoMail,
			"exits":     cmdExits,
			"drop":      cmdDrop,
			"waitfile":  cmdWaitFile,
			"waitcount": cmdWaitCount,
			"waitgrep":  cmdWaitGrep,
			"expand":    cmdExpand,
			"pyplugin":  cmdPyPlugin,
		},
	})
}

func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return "\n" + string(out), err
}

// cmdExpand writes a template with ${VAR} replaced by the script's
// environment: "expand TEMPLATE OUT". Only ${...} is expanded, so a
// regular expression's $ stays as it is.
func cmdExpand(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: expand TEMPLATE OUT")
	}
	text := ts.ReadFile(args[0])
	var b strings.Builder
	for {
		i := strings.Index(text, "${")
		if i < 0 {
			b.WriteString(text)
			break
		}
		j := strings.IndexByte(text[i:], '}')
		if j < 0 {
			ts.Fatalf("expand: unclosed ${ in %s", args[0])
		}
		b.WriteString(text[:i])
		b.WriteString(ts.Getenv(text[i+2 : i+j]))
		text = text[i+j+1:]
	}
	if err := os.WriteFile(ts.MkAbs(args[1]), []byte(b.String()), 0o600); err != nil {
		ts.Fatalf("expand: %v", err)
	}
}
