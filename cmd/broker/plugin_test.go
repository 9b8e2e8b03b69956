package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const pinTestConfig = "{\n  \"permission\": {\"*\": \"ask\"}\n}\n"

// pinFixture is a plugin binary the broker accepts and a config in dir.
func pinFixture(t *testing.T, binName string) (bin, dir string) {
	t.Helper()
	dir = t.TempDir()
	bin = filepath.Join(dir, binName)
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// pinnedPaths is the path of every authorizerChain link of the config at
// path.
func pinnedPaths(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		AuthorizerChain []struct{ Path string } `json:"authorizerChain"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	var out []string
	for _, l := range cfg.AuthorizerChain {
		out = append(out, l.Path)
	}
	return out
}

// A config that is a symlink (kept in a dotfiles or deploy directory)
// stays one: the file it leads to gets the pin, with its own mode.
func TestPinWriteFollowsASymlinkedConfig(t *testing.T) {
	bin, dir := pinFixture(t, "judge")
	real := filepath.Join(dir, "real.json")
	if err := os.WriteFile(real, []byte(pinTestConfig), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runPlugin([]string{"pin", bin, "--write", link}, &stdout, &stderr); code != 0 {
		t.Fatalf("pin: %d %s", code, stderr.String())
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Errorf("the config is no longer a symlink: %v %v", fi.Mode(), err)
	}
	if got := pinnedPaths(t, real); len(got) != 1 || got[0] != bin {
		t.Errorf("the symlink's target holds %q, want the pin of %s", got, bin)
	}
	if fi, err := os.Stat(real); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("the target's mode: %v %v, want 0640", fi.Mode(), err)
	}
}

// A mode the umask would cut is kept as it is.
func TestPinWriteKeepsTheModeWhateverTheUmask(t *testing.T) {
	bin, dir := pinFixture(t, "judge")
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(pinTestConfig), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg, 0o640); err != nil {
		t.Fatal(err)
	}
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	var stdout, stderr bytes.Buffer
	if code := runPlugin([]string{"pin", bin, "--write", cfg}, &stdout, &stderr); code != 0 {
		t.Fatalf("pin: %d %s", code, stderr.String())
	}
	if fi, err := os.Stat(cfg); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after pin: %v %v, want 0640", fi.Mode(), err)
	}
}

// root pinning the broker user's config leaves it the broker user's:
// a root-owned 0600 file would be one the broker cannot read.
func TestPinWriteKeepsTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the config another owner")
	}
	bin, dir := pinFixture(t, "judge")
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(pinTestConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(cfg, 4242, 4343); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runPlugin([]string{"pin", bin, "--write", cfg}, &stdout, &stderr); code != 0 {
		t.Fatalf("pin: %d %s", code, stderr.String())
	}
	fi, err := os.Stat(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 4242 || st.Gid != 4343 {
		t.Errorf("owner after pin %d:%d, want 4242:4343", st.Uid, st.Gid)
	}
}

// An edit that lands while pin works (an editor saving, another pin) is
// not overwritten by the pin's older copy.
func TestPinWriteLosesNoConcurrentEdit(t *testing.T) {
	bin, dir := pinFixture(t, "judge")
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(pinTestConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	const edited = "{\n  \"permission\": {\"*\": \"deny\"}\n}\n"
	pinBeforeReplace = func() {
		if err := os.WriteFile(cfg+".tmp", []byte(edited), 0o600); err != nil {
			t.Error(err)
		}
		if err := os.Rename(cfg+".tmp", cfg); err != nil {
			t.Error(err)
		}
	}
	defer func() { pinBeforeReplace = func() {} }()
	var stdout, stderr bytes.Buffer
	if code := runPlugin([]string{"pin", bin, "--write", cfg}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "changed while") {
		t.Errorf("pin over a concurrent edit: %d %s, want 1 and why", code, stderr.String())
	}
	if data, _ := os.ReadFile(cfg); string(data) != edited {
		t.Errorf("the concurrent edit was lost:\n%s", data)
	}
}

// A binary path with JSON's special characters is written escaped and
// reads back as itself.
func TestPinWriteEscapesTheBinaryPath(t *testing.T) {
	bin, dir := pinFixture(t, "odd \"name\\ \u2028 tab\t")
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(pinTestConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runPlugin([]string{"pin", bin, "--write", cfg}, &stdout, &stderr); code != 0 {
		t.Fatalf("pin: %d %s", code, stderr.String())
	}
	if got := pinnedPaths(t, cfg); len(got) != 1 || got[0] != bin {
		t.Errorf("pinned %q, want %q", got, bin)
	}
}
