//go:build !nats

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/seed6639df8c/courier/reviewlog"
)

// execNATS replaces this process with its NATS sibling (natsBinary),
// found beside this binary, with args (the command and its arguments)
// and this process's environment unchanged. It returns only when that
// failed: exit 2, with an error naming the path expected.
func execNATS(args []string, stderr io.Writer) (int, bool) {
	self, err := os.Executable()
	if err != nil {
		return usageError(stderr, "a NATS transport needs %s beside this binary, whose path is unknown: %v", natsBinary, err), true
	}
	path := filepath.Join(filepath.Dir(self), natsBinary)
	err = syscall.Exec(path, append([]string{path}, args...), os.Environ())
	if errors.Is(err, fs.ErrNotExist) {
		return usageError(stderr, "a NATS transport needs %s beside this binary: %s is missing "+
			"(make build builds it; or go build -tags nats -o %s ./cmd/child)", natsBinary, path, path), true
	}
	return usageError(stderr, "a NATS transport needs %s beside this binary: running %s: %v", natsBinary, path, err), true
}

// newNATSForwarder is never reached in this build (execNATS runs the
// sibling first); it exists so that the code that forwards compiles once.
func newNATSForwarder(string, natsFlags, time.Duration, time.Time, *reviewlog.Log, func(error)) (transportForwarder, error) {
	return nil, fmt.Errorf("this child was built without NATS: run %s", natsBinary)
}
