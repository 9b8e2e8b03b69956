// Command courier-authz-judge is the AI judge authorizer plugin: it shows
// a model the minimal evidence of a bash ask (the complete input, the
// units that asked, the working directory, the serving session's
// conversation) and turns its strict JSON verdict into allow, deny or
// defer, deny-first. Every other surface defers before any model call.
// Package plugins/judge is the judge; docs/JUDGE.md says how to run it.
//
// The operator configures it in the link's "args", with the network and
// the disclosures a judge needs, in shadow mode first:
//
//	{"name": "judge", "path": "/usr/local/libexec/courier/courier-authz-judge",
//	 "sha256": "<sha256sum of the binary>", "mode": "shadow", "network": true,
//	 "timeoutMs": 10000, "onFailure": "defer", "disclose": ["cwd", "conversation"],
//	 "args": ["--config", "/etc/courier/judge.json"]}
//
// and the judge in its config file (plugins/judge.Config):
//
//	{"provider": "anthropic", "model": "claude-sonnet-4-5",
//	 "api_key_file": "/etc/courier/judge.key", "timeout": "8s",
//	 "allow_enabled": false}
//
// Flags:
//
//	--config FILE    the judge's config (default $COURIER_JUDGE_CONFIG)
//
// A config that does not parse, or an API key that cannot be found, exits
// with status 2 before serving, which the broker reports as a plugin that
// did not start.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/seed6639df8c/courier/plugins/judge"
	"github.com/seed6639df8c/courier/plugins/sdk"
)

func main() {
	j, err := load(os.Args[1:], os.Getenv, os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "courier-authz-judge: %v\n", err)
		os.Exit(2)
	}
	sdk.Serve(j)
}

// load parses the flags and builds the judge of the config they name.
func load(args []string, getenv func(string) string, stderr io.Writer) (*judge.Judge, error) {
	fs := flag.NewFlagSet("courier-authz-judge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", getenv("COURIER_JUDGE_CONFIG"), "the judge's config file (default $COURIER_JUDGE_CONFIG)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *config == "" {
		return nil, fmt.Errorf("no config: give --config FILE or set COURIER_JUDGE_CONFIG")
	}
	c, err := judge.LoadConfig(*config)
	if err != nil {
		return nil, err
	}
	for _, w := range c.Warnings() {
		fmt.Fprintf(stderr, "courier-authz-judge: warning: %s\n", w)
	}
	return judge.New(c, getenv)
}
