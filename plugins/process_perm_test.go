package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/internal/fileperm"
)

// A plugin binary that others could have written, or put in its place,
// is never run: its link is disabled with the path, what was found and
// the fix (issue 14).
func TestOpenVerifiedRefusesABinaryOthersCanWrite(t *testing.T) {
	body := []byte("#!/bin/sh\nexit 0\n")
	sum := sha256.Sum256(body)
	tests := []struct {
		name     string
		mode     os.FileMode
		dirMode  os.FileMode
		uid      int // -1 keeps this process's
		dirUID   int
		want     string
		refusedB bool // wraps fileperm.ErrRefused
	}{
		{name: "private", mode: 0o700, dirMode: 0o700, uid: -1, dirUID: -1},
		{name: "installed", mode: 0o755, dirMode: 0o755, uid: -1, dirUID: -1},
		{name: "in a sticky directory", mode: 0o755, dirMode: os.ModeSticky | 0o777, uid: -1, dirUID: -1},
		{name: "group-writable", mode: 0o775, dirMode: 0o755, uid: -1, dirUID: -1, want: "mode 0775 lets group or others write it, and whoever writes it decides asks; chmod go-w ", refusedB: true},
		{name: "world-writable", mode: 0o757, dirMode: 0o755, uid: -1, dirUID: -1, want: "mode 0757", refusedB: true},
		{name: "directory others can write", mode: 0o755, dirMode: 0o777, uid: -1, dirUID: -1, want: "which lets group or others put another file in its place; chmod go-w ", refusedB: true},
		{name: "another user's binary", mode: 0o755, dirMode: 0o755, uid: 65534, dirUID: -1, want: "owned by uid 65534", refusedB: true},
		{name: "another user's directory", mode: 0o755, dirMode: 0o755, uid: -1, dirUID: 65534, want: "is owned by uid 65534", refusedB: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.uid >= 0 || tt.dirUID >= 0) && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			dir := filepath.Join(t.TempDir(), "bin")
			path := filepath.Join(dir, "authz")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, body, 0o700); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				p    string
				mode os.FileMode
				uid  int
			}{{path, tt.mode, tt.uid}, {dir, tt.dirMode, tt.dirUID}} {
				if err := os.Chmod(c.p, c.mode); err != nil {
					t.Fatal(err)
				}
				if c.uid >= 0 {
					if err := os.Chown(c.p, c.uid, -1); err != nil {
						t.Fatal(err)
					}
				}
			}
			f, err := openVerified(path, hex.EncodeToString(sum[:]))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				f.Close()
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("%s was accepted", path)
			}
			if !errors.Is(err, ErrBinary) || errors.Is(err, fileperm.ErrRefused) != tt.refusedB {
				t.Errorf("error %v: want ErrBinary, ErrRefused %v", err, tt.refusedB)
			}
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q, want it to name %s and say %q", msg, path, tt.want)
			}
		})
	}
}
