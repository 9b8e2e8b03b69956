package fileperm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nobody is a uid that is neither this process's nor root.
const nobody = 65534

func TestCheckFileAndDir(t *testing.T) {
	tests := []struct {
		name     string
		dirMode  os.FileMode
		fileMode os.FileMode
		fileUID  int // -1 keeps the creator's
		dirUID   int
		owners   Owners
		want     string // "" accepts; else a part of the error
	}{
		{name: "private", dirMode: 0o700, fileMode: 0o600, fileUID: -1, dirUID: -1},
		{name: "readable by all", dirMode: 0o755, fileMode: 0o644, fileUID: -1, dirUID: -1},
		{name: "group-writable file", dirMode: 0o755, fileMode: 0o664, fileUID: -1, dirUID: -1, want: "mode 0664 lets group or others write it, and whoever writes it decides asks; chmod go-w "},
		{name: "world-writable file", dirMode: 0o755, fileMode: 0o646, fileUID: -1, dirUID: -1, want: "mode 0646 lets group or others write it"},
		{name: "group-writable directory", dirMode: 0o775, fileMode: 0o644, fileUID: -1, dirUID: -1, want: "has mode 0775, which lets group or others put another file in its place; chmod go-w "},
		{name: "sticky world-writable directory", dirMode: os.ModeSticky | 0o777, fileMode: 0o644, fileUID: -1, dirUID: -1},
		{name: "another user's file", dirMode: 0o755, fileMode: 0o644, fileUID: nobody, dirUID: -1, owners: SelfOrRoot, want: "owned by uid 65534, expected uid"},
		{name: "another user's directory", dirMode: 0o755, fileMode: 0o644, fileUID: -1, dirUID: nobody, owners: SelfOrRoot, want: "is owned by uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.fileUID >= 0 || tt.dirUID >= 0) && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			dir := filepath.Join(t.TempDir(), "d")
			path := filepath.Join(dir, "f")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				p   string
				m   os.FileMode
				uid int
			}{{path, tt.fileMode, tt.fileUID}, {dir, tt.dirMode, tt.dirUID}} {
				if err := os.Chmod(c.p, c.m); err != nil {
					t.Fatal(err)
				}
				if c.uid >= 0 {
					if err := os.Chown(c.p, c.uid, -1); err != nil {
						t.Fatal(err)
					}
				}
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			err = errors.Join(CheckFile("config", path, fi, tt.owners), CheckDir("config", path, tt.owners))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrRefused)):
				t.Errorf("got %v, want an ErrRefused naming %q", err, tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), "refusing config "+path+": "):
				t.Errorf("%v does not name the file", err)
			}
		})
	}
}

// A symbolic link is judged by both directories: its own, and that of
// the file it resolves to.
func TestCheckDirFollowsALink(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	private := filepath.Join(base, "private")
	for _, d := range []string{open, private} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(open, "courier.json")
	if err := os.WriteFile(target, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(private, "courier.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir("config", link, SelfOrRoot); err == nil || !strings.Contains(err.Error(), "its directory "+open+" has mode 0777") {
		t.Errorf("CheckDir through a link into an open directory: %v", err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir("config", link, SelfOrRoot); err != nil {
		t.Errorf("CheckDir through a link into a closed directory: %v", err)
	}
}

// Every hop of a chain of links is judged by its directory (review
// finding 11): home/conf.json → shared/link → home/real.json, with shared
// open to all and not sticky, lets anyone repoint shared/link, though the
// first and the last hops live in a closed directory. Passing shared/link
// itself was refused already; the chain must be too.
func TestCheckDirFollowsEveryHopOfAChain(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	shared := filepath.Join(base, "shared")
	for _, d := range []string{home, shared} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	real := filepath.Join(home, "real.json")
	if err := os.WriteFile(real, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	middle := filepath.Join(shared, "link")
	if err := os.Symlink(real, middle); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(home, "conf.json")
	// A relative hop, resolved against the directory of its link.
	if err := os.Symlink(filepath.Join("..", "shared", "link"), conf); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{conf, middle} {
		err := CheckDir("config", p, SelfOrRoot)
		if err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "its directory "+shared+" has mode 0777") {
			t.Errorf("CheckDir(%s) through a link in an open directory: %v", p, err)
		}
	}
	// Sticky, the open directory lets nobody repoint a link they do not
	// own: the chain is accepted.
	if err := os.Chmod(shared, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir("config", conf, SelfOrRoot); err != nil {
		t.Errorf("CheckDir(%s) through a sticky directory: %v", conf, err)
	}
}
