package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/seed6639df8c/courier/rules"
)

const checkUsage = `usage: broker check [--config FILE] --surface S --value V [flags]

Explains what the broker's recorded authority answers for one ask: the
final action (allow, ask or deny), the rule that decided it (surface,
pattern, action, which config layer and where in the file), and every rule
that matched, in the order the last match wins. Session grants are not
consulted. Exit status 0 whatever the action; 2 for a usage or config error.

Flags:
`

type stringList []string

func (l *stringList) String() string     { return fmt.Sprint(*l) }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runCheck(args []string, stdout, stderr io.Writer) int {
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
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 || *surface == "" || *value == "" {
		fmt.Fprintln(stderr, "broker check: --surface and --value are required")
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
