package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/seed6639df8c/courier/rules"
)

const checkUsage = `usage: broker check [--config FILE] --surface S --value V [flags]
       broker check [--config FILE] --request FILE [--json]
       broker check [--config FILE] --plugins [--verbose]

Explains what the broker's recorded authority answers for one ask: the
final action (allow, ask or deny), the rule that decided it (surface,
pattern, action, which config layer and where in the file), and every rule
that matched, in the order the last match wins. Session grants are not
consulted.

With --request, the ask is a request file as a child writes it into
requests/ (pi 25.x, pi 20.x or courier's): it is read and decoded as the
broker reads it, its facts are shown, then the path the broker takes: the
rules on the child's access facts; for a request without them (a pi 20.x
child's) the rules are not consulted, unless legacyBashDisplayMatch
matches a bash request by its display value; and, for an ask, what comes
next (the authorizer links, the terminal). The session and the request's
age are not judged.

With --plugins, every authorizer link of the config is started as broker
serve starts it (its binary checked against its pin, confined as this
machine allows), asked the gRPC health check (service "plugin") and, when
it implements it, AuthorizerService.Health, then stopped: one line per
link on stdout, "ok" or "FAIL" with what failed; the details of a failure
(what the plugin printed on stderr, the contract) on stderr. --verbose
adds the plugin host's diagnostic log on stderr. Exit status 1 when a
link failed.

Exit status 0 whatever the action; 2 for a usage or config error, or a
request file the broker would reject (the message names the file and the
field).

Flags:
`

type stringList []string

func (l *stringList) String() string     { return fmt.Sprint(*l) }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("broker check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, checkUsage); fs.PrintDefaults() }
	configPath := fs.String("config", "", "rules config; default the embedded defaults")
	surface := fs.String("surface", "", "gate surface: bash, path_read, path_write, a tool name... (required)")
	value := fs.String("value", "", "the command, path or tool input (required)")
	agent := fs.String("agent", "", "the asking agent's name (agent overrides apply)")
	floor := fs.String("floor", "", "a child's floor sentinel, e.g. <opaque-bash-wrapper>")
	cwd := fs.String("cwd", "", "the requester's working directory, for relative paths")
	var match stringList
	fs.Var(&match, "match", "another value of the same ask, e.g. a path alias (repeatable)")
	asJSON := fs.Bool("json", false, "print the explanation as JSON")
	requestFile := fs.String("request", "", "explain this request file as the broker would resolve it, instead of --surface and --value")
	checkPlugins := fs.Bool("plugins", false, "start every configured authorizer link, probe its health and check its pin, instead of explaining an ask")
	verbose := fs.Bool("verbose", false, "with --plugins: print the plugin host's diagnostic log on stderr")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	askFlags := *surface != "" || *value != "" || *agent != "" || *floor != "" || *cwd != "" || len(match) > 0
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "broker check: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	case *checkPlugins && (askFlags || *requestFile != "" || *asJSON):
		fmt.Fprintln(stderr, "broker check: --plugins checks the configured links: no --surface, --value, --agent, --floor, --cwd, --match, --request or --json")
		return exitUsage
	case *checkPlugins:
		return runCheckPlugins(ctx, *configPath, *verbose, stdout, stderr)
	case *requestFile != "" && askFlags:
		fmt.Fprintln(stderr, "broker check: --request FILE takes the ask from the file: no --surface, --value, --agent, --floor, --cwd or --match")
		return exitUsage
	case *requestFile == "" && (*surface == "" || *value == ""):
		fmt.Fprintln(stderr, "broker check: --surface and --value are required (or --request FILE)")
		return exitUsage
	}
	cfg, err := rules.Load(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "broker check: %v\n", err)
		return exitUsage
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "broker: warning: %s\n", w)
	}
	home, _ := os.UserHomeDir()
	policy, err := rules.NewPolicy(cfg, rules.Options{Home: home})
	if err != nil {
		fmt.Fprintf(stderr, "broker check: %v\n", err)
		return exitUsage
	}
	if *requestFile != "" {
		return checkRequest(*requestFile, cfg, policy, *asJSON, stdout, stderr)
	}
	q := rules.Query{Surface: *surface, MatchValues: append([]string{*value}, match...), Agent: *agent, Floor: *floor, Cwd: *cwd}
	e := policy.Explain(q)
	if *asJSON {
		err = writeJSON(stdout, e)
	} else {
		err = e.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "broker check: %v\n", err)
		return 1
	}
	return 0
}

// checkRequest is broker check --request FILE.
func checkRequest(path string, cfg *rules.Config, policy *rules.Policy, asJSON bool, stdout, stderr io.Writer) int {
	x, err := explainRequest(path, cfg, policy)
	if err != nil {
		fmt.Fprintf(stderr, "broker check: %v\n", err)
		return exitUsage
	}
	if asJSON {
		err = writeJSON(stdout, x)
	} else {
		err = writeRequestText(stdout, x)
	}
	if err != nil {
		fmt.Fprintf(stderr, "broker check: %v\n", err)
		return 1
	}
	return 0
}
