package rules

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A config that others could have written is refused with its path, its
// mode and the fix, never served (issue 14).
func TestLoadFileRefusesAConfigOthersCanWrite(t *testing.T) {
	const doc = `{"permission": {"*": "ask"}}`
	tests := []struct {
		name    string
		mode    os.FileMode
		dirMode os.FileMode
		uid     int // -1 keeps this process's
		want    string
	}{
		{name: "owner-only", mode: 0o600, dirMode: 0o700, uid: -1},
		{name: "readable by all", mode: 0o644, dirMode: 0o755, uid: -1},
		{name: "group-writable", mode: 0o664, dirMode: 0o755, uid: -1, want: "mode 0664 lets group or others write it, and whoever writes it decides asks; chmod go-w "},
		{name: "world-writable", mode: 0o666, dirMode: 0o755, uid: -1, want: "mode 0666 lets group or others write it"},
		{name: "in a directory others can write", mode: 0o644, dirMode: 0o777, uid: -1, want: "which lets group or others put another file in its place; chmod go-w "},
		{name: "another user's", mode: 0o644, dirMode: 0o755, uid: 65534, want: "owned by uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.uid >= 0 && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			dir := filepath.Join(t.TempDir(), "etc")
			path := filepath.Join(dir, "courier.json")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.dirMode); err != nil {
				t.Fatal(err)
			}
			if tt.uid >= 0 {
				if err := os.Chown(path, tt.uid, -1); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := LoadFile(path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded %s (%v): want it refused", path, cfg.Source)
			}
			if msg := err.Error(); !strings.Contains(msg, "refusing config "+path+": ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q, want it to name %s and say %q", msg, path, tt.want)
			}
		})
	}
}
