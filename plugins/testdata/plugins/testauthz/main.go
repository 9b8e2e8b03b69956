// Command testauthz is a deliberately misbehaving authorizer plugin for
// the tests of package plugins. Flags choose what it does at start; the
// display value of each ask chooses what it does with that ask:
//
//	allow, deny, defer   that verdict (deny with reason "denied by testauthz")
//	crash                os.Exit(3) in the middle of the call
//	hang                 never answer, ignoring the deadline
//	panic                panic in a goroutine: the process dies
//	panic-handler        panic in the handler: the SDK recovers it
//	invalid              an invalid verdict kind
//	error                return an error
//	stderr               print hostile JSON to stderr, then allow
//	flood                print 1000 long lines to stderr and stdout, then allow
//	evidence             deny, the reason being the evidence as JSON
//	seen                 deny, the reason being a short JSON summary of
//	                     the identity fields seen (requesterCwd, principal)
//	env                  deny, the reason being os.Environ() as JSON
//	proc                 deny, the reason being {pid, cwd, stdin} as JSON
//	big                  deny with a 2 MiB reason
//	notes                defer with a code, a reason and metadata
//	hostile-notes        defer with a code, a reason and metadata that
//	                     the broker must clean or drop
//	…#judged             (a value ending so) deny, the reason being the
//	                     Bash and Conversation evidence as JSON
//
// Anything else defers.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/plugins/sdk"
)

type authz struct{}

func (authz) Authorize(ctx context.Context, ev authorizer.Evidence) (authorizer.Verdict, error) {
	if strings.HasSuffix(ev.Value, "#judged") {
		return jsonDeny(map[string]any{"bash": ev.Bash, "conversation": ev.Conversation})
	}
	switch ev.Value {
	case "allow":
		return sdk.Allow(), nil
	case "deny":
		return sdk.Deny("denied by testauthz"), nil
	case "crash":
		os.Exit(3)
	case "hang":
		select {}
	case "panic":
		go panic("testauthz: boom in a goroutine")
		select {}
	case "panic-handler":
		panic("testauthz: boom in the handler")
	case "invalid":
		return authorizer.Verdict{Kind: 7}, nil
	case "error":
		return authorizer.Verdict{}, errors.New("testauthz: cannot judge")
	case "stderr":
		hostile(os.Stderr)
		return sdk.Allow(), nil
	case "flood":
		line := strings.Repeat("x", 10000)
		for range 1000 {
			fmt.Fprintln(os.Stderr, line)
			fmt.Fprintln(os.Stdout, line)
		}
		return sdk.Allow(), nil
	case "evidence":
		return jsonDeny(ev)
	case "seen":
		return jsonDeny(map[string]any{
			"requesterCwd": ev.RequesterCwd, "principal": ev.Principal, "access": ev.Access != nil,
			"agent": ev.Forwarding.RequesterAgentName,
		})
	case "env":
		return jsonDeny(os.Environ())
	case "proc":
		cwd, _ := os.Getwd()
		return jsonDeny(map[string]any{"pid": os.Getpid(), "cwd": cwd, "stdin": readStdin()})
	case "big":
		return sdk.Deny(strings.Repeat("b", 2<<20)), nil
	case "notes":
		v := sdk.DeferWith("missing_cwd", "the command has relative paths")
		v.Meta = authorizer.Meta{Model: "claude-x", PromptVersion: "judge-v1", InputTokens: 812, OutputTokens: 40, LatencyMs: 930}
		return v, nil
	case "hostile-notes":
		return authorizer.Verdict{
			Kind: authorizer.Defer, Code: "has space", Reason: "\x1b[2Jwhy\xff",
			Meta: authorizer.Meta{
				Model: "\x1b[31m" + strings.Repeat("M", 10<<10), PromptVersion: "v1\u202e\n",
				InputTokens: -5, OutputTokens: -1 << 62, LatencyMs: -1,
			},
		}, nil
	}
	return sdk.Defer(), nil
}

func jsonDeny(v any) (authorizer.Verdict, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return authorizer.Verdict{}, err
	}
	return sdk.Deny(string(b)), nil
}

// readStdin says what reading stdin gives: "eof" when it is empty.
func readStdin() string {
	done := make(chan string, 1)
	go func() {
		b := make([]byte, 16)
		n, err := os.Stdin.Read(b)
		if errors.Is(err, io.EOF) {
			done <- "eof"
			return
		}
		done <- fmt.Sprintf("read %d bytes, err %v", n, err)
	}()
	select {
	case s := <-done:
		return s
	case <-time.After(time.Second):
		return "blocked"
	}
}

// hostile prints lines that crash an unguarded go-plugin v1.8.0 host.
func hostile(w io.Writer) {
	fmt.Fprintln(w, `{"@message": 1, "@level": "info"}`)
	fmt.Fprintln(w, `{"@message": "x", "@level": 42}`)
	fmt.Fprintln(w, `{"@level": ["error"], "@message": {"nested": true}, "@timestamp": 7}`)
	fmt.Fprintln(w, "\x1b[31mnot json\x00\xff")
}

func main() {
	garbage := flag.Bool("stdout-garbage", false, "print a line to stdout before the handshake")
	hostileStart := flag.Bool("stderr-hostile", false, "print hostile JSON to stderr before the handshake")
	delay := flag.Duration("start-delay", 0, "wait this long before serving")
	flag.Parse()
	if *hostileStart {
		hostile(os.Stderr)
	}
	if *garbage {
		fmt.Println("starting up! {\"@message\": 1}")
	}
	time.Sleep(*delay)
	sdk.Serve(authz{})
}
