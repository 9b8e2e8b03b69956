//go:build !nats

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/seed6639df8c/courier/internal/sibling"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
)

// natsFirst runs the NATS sibling (natsBinary) in this process's place
// when args are broker serve's and name a NATS flag (natsFlagIn), with the
// same arguments and environment, stdio and process id: a supervisor, a
// pty or a signal sees one process. main calls it before anything else:
// before the inherited descriptors are sealed (a --config /dev/fd/3 or a
// password file given as <(…) must reach the sibling), and before the
// signal handlers (a signal ignored under nohup stays ignored across the
// exec). It returns only when that failed: exit 2, with an error naming
// the path expected. A sibling that is this binary, a build without NATS
// or a file others could have written is refused (sibling.Exec).
func natsFirst(args []string, stderr io.Writer) (int, bool) {
	if len(args) == 0 || args[0] != "serve" || !natsFlagIn(args[1:]) {
		return 0, false
	}
	err := sibling.Exec(natsBinary, args)
	if errors.Is(err, fs.ErrNotExist) {
		return serveError(stderr, "the NATS flags need %s beside this binary: %v "+
			"(make build builds it; or go build -tags nats -o <that path> ./cmd/broker)", natsBinary, err), true
	}
	return serveError(stderr, "the NATS flags need %s beside this binary: %v", natsBinary, err), true
}

// natsFlagIn reports whether serve's arguments name a NATS flag, read
// before they are parsed (natsFirst): any argument that spells one, as
// -name, --name or with =value. It may say yes for a value that looks like
// a NATS flag (--session --nats), which only runs the sibling, where the
// arguments are parsed as they always were; it never says no for a NATS
// flag the parse would take.
func natsFlagIn(args []string) bool {
	names := map[string]bool{}
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addNATSFlags(fs)
	fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, ok := strings.CutPrefix(a, "-")
		if !ok {
			continue
		}
		name = strings.TrimPrefix(name, "-")
		name, _, _ = strings.Cut(name, "=")
		if names[name] {
			return true
		}
	}
	return false
}

// errNoNATS is what the NATS parts of this build return: never reached,
// since natsFirst runs the sibling whenever a NATS flag is given; they
// exist so that the code that serves compiles once.
var errNoNATS = fmt.Errorf("this broker was built without NATS: run %s", natsBinary)

// check has nothing to check in this build: a NATS flag never reaches it
// (natsFirst ran the sibling, which checks them).
func (f *natsFlags) check(string) error { return nil }

func startNATS(context.Context, *natsFlags, mailbox.Layout, string, *reviewlog.Log, <-chan struct{}, io.Writer) (*natsServing, error) {
	return nil, errNoNATS
}

func natsExit(error) int { return exitUsage }

func openNATSRelay(terminalSpec, string) (openTerminal, error) {
	var none openTerminal
	return none, errNoNATS
}
