package filewatch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// waitLimit bounds every wait in these tests; reaching it is a failure,
// never a pass.
const waitLimit = 10 * time.Second

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestList(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.json", "b.json", ".c.json", "d.txt"} {
		touch(t, filepath.Join(dir, name))
	}
	all, err := List(dir, nil)
	slices.Sort(all)
	if err != nil || strings.Join(all, " ") != ".c.json a.json b.json d.txt" {
		t.Errorf("List(nil) = %v, %v", all, err)
	}
	json := func(name string) bool { return strings.HasSuffix(name, ".json") && name[0] != '.' }
	kept, err := List(dir, json)
	slices.Sort(kept)
	if err != nil || strings.Join(kept, " ") != "a.json b.json" {
		t.Errorf("List(json) = %v, %v", kept, err)
	}
	if _, err := List(filepath.Join(dir, "missing"), json); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("List of a missing directory: %v, want not-exist", err)
	}
}

func TestStat(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	if _, ok := Stat(path); ok {
		t.Error("Stat found a file that is not there")
	}
	touch(t, path)
	first, ok := Stat(path)
	if !ok || first == (ID{}) {
		t.Fatalf("Stat = %v, %v", first, ok)
	}
	if again, _ := Stat(path); again != first {
		t.Error("the same file, another ID")
	}
	// Replaced under the same name: another file, even when the inode
	// number is reused at once.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // past a coarse ctime tick
	touch(t, path)
	if replaced, _ := Stat(path); replaced == first {
		t.Error("a replaced file kept its ID")
	}
	if _, ok := Stat(filepath.Join(path, "below")); ok {
		t.Error("Stat found a file below a file")
	}
	if _, ok := StatDir(path); ok {
		t.Error("StatDir took a file for a directory")
	}
	if id, ok := StatDir(dir); !ok || id == (ID{}) {
		t.Errorf("StatDir(dir) = %v, %v", id, ok)
	}
}
