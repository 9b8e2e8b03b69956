package mailbox

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ReadFileInto reads into the caller's buffer when it has room for the
// file and a byte, into a fresh one otherwise, and asks for no buffer for
// a path it refuses: the same checks as ReadFile, the same content.
func TestReadFileInto(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "req.json")
	content := bytes.Repeat([]byte("y"), 1000)
	if err := os.WriteFile(file, content, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		path      string
		buf       []byte
		wantErr   error
		wantAsked int64 // the size the buffer func is given; -1: not asked
		inPlace   bool  // read into buf's own array
	}{
		{"room for the file and a byte", file, make([]byte, 7, 1001), nil, 1000, true},
		{"a megabyte's buffer", file, make([]byte, 0, MaxFileSize+1), nil, 1000, true},
		{"exactly the file: no room for the byte", file, make([]byte, 0, 1000), nil, 1000, false},
		{"no buffer", file, nil, nil, 1000, false},
		{"a refused path asks for none", link, make([]byte, 0, 2000), ErrSymlink, -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := int64(-1)
			data, err := ReadFileInto(tt.path, func(size int64) []byte { asked = size; return tt.buf })
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err %v, want %v", err, tt.wantErr)
			}
			if asked != tt.wantAsked {
				t.Errorf("buffer asked for %d bytes, want %d", asked, tt.wantAsked)
			}
			if err != nil {
				return
			}
			if !bytes.Equal(data, content) {
				t.Fatalf("read %d bytes, not the file's", len(data))
			}
			if inPlace := cap(tt.buf) > 0 && &data[:1][0] == &tt.buf[:1][0]; inPlace != tt.inPlace {
				t.Errorf("read in place %v, want %v", inPlace, tt.inPlace)
			}
		})
	}
}
