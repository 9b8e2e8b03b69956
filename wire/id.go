package wire

import (
	"errors"
	"fmt"
)

// MaxIDLength bounds a request id. An id names a file (`<id>.json`, and pi's
// temp name `<id>.json.<pid>.<ms>.tmp`), so it must stay well inside the
// 255-byte name limit of common filesystems; pi's own ids are 27–41 bytes.
const MaxIDLength = 128

// ErrInvalidID is wrapped by every error that rejects a request id.
var ErrInvalidID = errors.New("invalid request id")

// ValidateID reports whether id may name a mailbox file: it must match
// ^[A-Za-z0-9._-]+$ and be at most MaxIDLength bytes. Both sides call it
// before an id read off disk names a file, because pi's serving side builds
// the response path from the id inside the request and never checks it.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidID)
	}
	if len(id) > MaxIDLength {
		return fmt.Errorf("%w: %d bytes, at most %d allowed", ErrInvalidID, len(id), MaxIDLength)
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return fmt.Errorf("%w: byte %d is %q, only A-Z a-z 0-9 . _ - allowed", ErrInvalidID, i, id[i])
		}
	}
	return nil
}

func idByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c == '.' || c == '_' || c == '-'
}
