// Package siblingtest sets up, for the tests of a command that runs its
// NATS sibling (internal/sibling), a copy of the test binary under the
// command's name with a sibling of the test's choosing beside it.
package siblingtest

import (
	"os"
	"path/filepath"
	"testing"
)

// Beside copies this test binary into a new directory as name (the test's
// TestMain runs the command's main in it) and, when sibling is not "",
// writes sibling (a script) beside it as siblingName. It returns the
// copy's path and the directory.
func Beside(t *testing.T, name, siblingName, sibling string) (bin, dir string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, name)
	if err := CopyExecutable(self, bin); err != nil {
		t.Fatal(err)
	}
	if sibling != "" {
		if err := os.WriteFile(filepath.Join(dir, siblingName), []byte(sibling), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin, dir
}

// CopyExecutable copies the executable from to a new file to, mode 0755.
func CopyExecutable(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}
