package confine

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSealInheritedKeepsInheritedFdsFromChildren: an fd the broker
// inherited without close-on-exec (a shell's 41</file) reached every
// process it started, a plugin that runs without the init included.
// After SealInherited a child cannot read it; the broker still can.
func TestSealInheritedKeepsInheritedFdsFromChildren(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	secret := filepath.Join(t.TempDir(), "review.jsonl")
	if err := os.WriteFile(secret, []byte("SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const fd = 41
	// Dup2 leaves the new fd without close-on-exec, as an inherited one is.
	if err := syscall.Dup2(int(f.Fd()), fd); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	readInChild := func() string {
		out, _ := exec.Command("bash", "-c", "cat <&41 2>/dev/null; true").Output()
		return string(out)
	}
	if got := readInChild(); got != "SECRET\n" {
		t.Fatalf("before sealing a child read %q through fd %d, want the secret (the test's premise)", got, fd)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := SealInherited(); err != nil {
		t.Fatal(err)
	}
	if got := readInChild(); got != "" {
		t.Errorf("after SealInherited a child read %q through inherited fd %d", got, fd)
	}
	buf := make([]byte, 6)
	if _, err := syscall.Pread(fd, buf, 0); err != nil || string(buf) != "SECRET" {
		t.Errorf("the broker itself lost fd %d: %q, %v", fd, buf, err)
	}
}
