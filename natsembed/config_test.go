package natsembed

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/seed6639df8c/courier/internal/fileperm"
)

// An operator's server config that others could have written is refused
// with its path, as a rules config is: it decides who may answer asks.
func TestCheckConfigFile(t *testing.T) {
	for _, c := range []struct {
		name          string
		mode, dirMode os.FileMode
		refused       bool
	}{
		{"the operator's own", 0o600, 0o700, false},
		{"readable by others", 0o644, 0o755, false},
		{"writable by others", 0o666, 0o700, true},
		{"writable by the group", 0o620, 0o700, true},
		{"in a directory others may write", 0o600, 0o777, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "conf")
			mkdirMode(t, dir, c.dirMode)
			path := filepath.Join(dir, "server.conf")
			if err := os.WriteFile(path, []byte("port: 4222\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			err := CheckConfigFile(path)
			if got := errors.Is(err, fileperm.ErrRefused); got != c.refused {
				t.Fatalf("CheckConfigFile = %v, refused %v, want %v", err, got, c.refused)
			}
		})
	}
	if err := CheckConfigFile(filepath.Join(t.TempDir(), "missing.conf")); err == nil {
		t.Error("a missing config was accepted")
	}
}
