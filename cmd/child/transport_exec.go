//go:build !nats

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/seed6639df8c/courier/internal/sibling"
	"github.com/seed6639df8c/courier/reviewlog"
)

// execNATS replaces this process with its NATS sibling (natsBinary),
// found beside this binary, with args (the command and its arguments)
// and this process's environment unchanged. It returns only when that
// failed: exit 2, with an error naming the path expected. A sibling that
// is this binary, a build without NATS, or a file others could have
// written is refused (sibling.Exec): the first two would run themselves
// again for ever, and the --timeout that bounds an ask is not armed yet.
func execNATS(args []string, stderr io.Writer) (int, bool) {
	err := sibling.Exec(natsBinary, args)
	if errors.Is(err, fs.ErrNotExist) {
		return usageError(stderr, "a NATS transport needs %s beside this binary: %v "+
			"(make build builds it; or go build -tags nats -o <that path> ./cmd/child)", natsBinary, err), true
	}
	return usageError(stderr, "a NATS transport needs %s beside this binary: %v", natsBinary, err), true
}

// newNATSForwarder is never reached in this build (execNATS runs the
// sibling first); it exists so that the code that forwards compiles once.
func newNATSForwarder(string, natsFlags, time.Duration, time.Time, *reviewlog.Log, func(error)) (transportForwarder, error) {
	return nil, fmt.Errorf("this child was built without NATS: run %s", natsBinary)
}
