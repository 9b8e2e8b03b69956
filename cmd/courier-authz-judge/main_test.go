package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "judge.json")
	if err := os.WriteFile(good, []byte(`{"provider":"anthropic","model":"m","api_key_env":"JUDGE_KEY"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"provider":"anthropic","model":"m","temperature":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	withKey := map[string]string{"JUDGE_KEY": "sk-x"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		err  string
	}{
		{name: "flag", args: []string{"--config", good}, env: withKey},
		{name: "environment", env: map[string]string{"JUDGE_KEY": "sk-x", "COURIER_JUDGE_CONFIG": good}},
		{name: "no config", env: withKey, err: "no config"},
		{name: "missing file", args: []string{"--config", filepath.Join(dir, "none.json")}, env: withKey, err: "no such file"},
		{name: "unknown key", args: []string{"--config", bad}, env: withKey, err: "temperature"},
		{name: "no key", args: []string{"--config", good}, err: "JUDGE_KEY is empty or unset"},
		{name: "stray argument", args: []string{"--config", good, "extra"}, env: withKey, err: "unexpected argument"},
		{name: "unknown flag", args: []string{"--model", "x"}, env: withKey, err: "flag provided but not defined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := load(tc.args, env(tc.env), io.Discard)
			switch {
			case tc.err == "" && (err != nil || j == nil):
				t.Fatalf("load: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("load: %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// TestLoadWarns: what Config.Warnings finds is said on stderr at start,
// and the judge still starts.
func TestLoadWarns(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "judge.key")
	if err := os.WriteFile(key, []byte("sk-x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o640); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "judge.json")
	if err := os.WriteFile(config, []byte(`{"provider":"openai","model":"m","base_url":"http://gpu-box.lan:8000/v1","api_key_file":"`+key+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	j, err := load([]string{"--config", config}, func(string) string { return "" }, &stderr)
	if err != nil || j == nil {
		t.Fatalf("load: %v", err)
	}
	out := stderr.String()
	if !strings.Contains(out, "warning: base_url http://gpu-box.lan:8000/v1 is plain http") || !strings.Contains(out, "readable by others (mode 0640)") || strings.Contains(out, "sk-x") {
		t.Errorf("stderr %q", out)
	}
}
