package main

import (
	"fmt"
	"io"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/serve"
)

// terminalSpec is what a terminal may need from the command line.
type terminalSpec struct {
	kind    string
	layout  mailbox.Layout
	session string
	log     *reviewlog.Log
	stderr  io.Writer
}

// openTerminal is a terminal and what to release when serving ends.
type openTerminal struct {
	serve.Terminal
	close func()
}

// newTerminal builds the --terminal the operator chose.
func newTerminal(spec terminalSpec) (openTerminal, error) {
	switch spec.kind {
	case "deny":
		return openTerminal{Terminal: serve.Headless{}, close: func() {}}, nil
	case "tty", "relay":
		return openTerminal{}, fmt.Errorf("--terminal %s is not implemented yet; use --terminal deny", spec.kind)
	}
	return openTerminal{}, fmt.Errorf("--terminal %q: expected deny, tty or relay", spec.kind)
}
