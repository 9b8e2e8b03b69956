//go:build !nats

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
)

// natsSibling replaces this process with its NATS sibling (natsBinary),
// found beside this binary's real path, with args (the subcommand and
// its arguments) and this process's environment, stdio and process id
// unchanged: a supervisor, a pty or a signal sees the same process. It
// returns only when that failed: exit 2, with an error naming the path
// expected.
func natsSibling(args []string, stderr io.Writer) (int, bool) {
	self, err := os.Executable()
	if err != nil {
		return serveError(stderr, "the NATS flags need %s beside this binary, whose path is unknown: %v", natsBinary, err), true
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	path := filepath.Join(filepath.Dir(self), natsBinary)
	err = syscall.Exec(path, append([]string{path}, args...), os.Environ())
	if errors.Is(err, fs.ErrNotExist) {
		return serveError(stderr, "the NATS flags need %s beside this binary: %s is missing "+
			"(make build builds it; or go build -tags nats -o %s ./cmd/broker)", natsBinary, path, path), true
	}
	return serveError(stderr, "the NATS flags need %s beside this binary: running %s: %v", natsBinary, path, err), true
}

// errNoNATS is what the NATS parts of this build return: never reached,
// since natsSibling runs first whenever a NATS flag is given; they exist
// so that the code that serves compiles once.
var errNoNATS = fmt.Errorf("this broker was built without NATS: run %s", natsBinary)

func (f *natsFlags) check(string) error {
	if f.used() {
		return errNoNATS
	}
	return nil
}

func startNATS(context.Context, *natsFlags, mailbox.Layout, string, *reviewlog.Log, <-chan struct{}, io.Writer) (*natsServing, error) {
	return nil, errNoNATS
}

func natsExit(error) int { return exitUsage }

func openNATSRelay(terminalSpec, string) (openTerminal, error) {
	var none openTerminal
	return none, errNoNATS
}
