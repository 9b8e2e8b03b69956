package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/notify"
	"github.com/seed6639df8c/courier/prompt"
	"github.com/seed6639df8c/courier/relay"
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
	// parent is --parent, for --terminal relay.
	parent            string
	forwardingTimeout time.Duration
	watch             mailbox.WatchOptions
	// notifyCmd is --notify-cmd and promptTimeout the config's
	// promptTimeoutMs, for --terminal tty.
	notifyCmd     string
	promptTimeout time.Duration
	// ctx and nats, for --terminal relay over NATS (--relay-transport):
	// the connection is made when the terminal is.
	ctx  context.Context
	nats *natsFlags
}

// openTerminal is a terminal and what to release when serving ends.
type openTerminal struct {
	serve.Terminal
	close func()
}

// newTerminal builds the --terminal the operator chose.
func newTerminal(spec terminalSpec) (openTerminal, error) {
	if spec.notifyCmd != "" && spec.kind != "tty" {
		return openTerminal{}, fmt.Errorf("--notify-cmd tells of asks at the operator's prompt: it needs --terminal tty (the terminal is %s)", spec.kind)
	}
	switch spec.kind {
	case "deny":
		return openTerminal{Terminal: serve.Headless{}, close: func() {}}, nil
	case "relay":
		parent, ok := forward.ResolveTarget(spec.parent, spec.session, os.Getenv)
		if !ok {
			return openTerminal{}, fmt.Errorf("--terminal relay needs this session's parent: --parent, $%s or $%s (a parent equal to --session is skipped)", forward.EnvRouterParent, forward.EnvSubagentParent)
		}
		if spec.nats != nil && spec.nats.relayURL != "" {
			return openNATSRelay(spec, parent)
		}
		client := &forward.Client{
			Layout: spec.layout, Log: spec.log, Timeout: spec.forwardingTimeout, Watch: spec.watch,
			OnWarning: func(err error) { fmt.Fprintf(spec.stderr, "broker: relay: %v\n", err) },
		}
		return openTerminal{Terminal: &relay.Terminal{Forwarder: client, Session: spec.session, Parent: parent}, close: client.Close}, nil
	case "tty":
		return openPrompt(spec)
	}
	return openTerminal{}, fmt.Errorf("--terminal %q: expected deny, tty or relay", spec.kind)
}

// openPrompt puts the operator's prompt on this terminal (--terminal tty).
func openPrompt(spec terminalSpec) (openTerminal, error) {
	if err := notify.CheckCommand(spec.notifyCmd); err != nil {
		return openTerminal{}, err
	}
	p, err := prompt.Open(os.Stdin, prompt.Options{
		Session: spec.session, PromptTimeout: spec.promptTimeout, NotifyCmd: spec.notifyCmd, Desktop: true,
		OnError: func(err error) { fmt.Fprintf(spec.stderr, "broker: %v\n", err) },
	})
	if err != nil {
		return openTerminal{}, fmt.Errorf("--terminal tty: %w; run the broker in a terminal (tmux, ssh -t), or use --terminal deny", err)
	}
	return openTerminal{Terminal: p, close: func() {
		if err := p.Close(); err != nil {
			fmt.Fprintf(spec.stderr, "broker: %v\n", err)
		}
	}}, nil
}
