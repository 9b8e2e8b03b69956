// Command courier-authz-denylist is an example courier authorizer plugin:
// it denies asks that match the operator's regular expressions, with a
// teaching reason, and defers the rest. It never allows.
//
// The broker starts it; the operator configures it in the link's "args"
// (or a rules file named there):
//
//	{"name": "denylist", "path": "/usr/local/libexec/courier/courier-authz-denylist",
//	 "sha256": "<sha256sum of the binary>",
//	 "args": ["--deny", "^git push .*--force", "--deny", "(^|/)\\.env$",
//	          "--reason", "This is on the operator's deny-list; choose another approach.",
//	          "--rules", "/etc/courier/denylist.json"]}
//
// Flags:
//
//	--deny REGEX     deny values matching REGEX (repeatable)
//	--reason TEXT    the reason --deny patterns give (default: a generic
//	                 teaching reason naming the pattern)
//	--surface S      limit --deny patterns to surface S (repeatable)
//	--rules FILE     more rules: {"rules": [{"pattern", "reason", "surfaces"}]}
//
// Without any rule it exits with status 2 before serving, which the broker
// reports as a plugin that did not start.
package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"

	"github.com/seed6639df8c/courier/plugins/denylist"
	"github.com/seed6639df8c/courier/plugins/sdk"
)

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return fmt.Sprint(*m) }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var deny, surfaces multi
	flag.Var(&deny, "deny", "deny values matching this regular expression (repeatable)")
	flag.Var(&surfaces, "surface", "limit --deny patterns to this surface (repeatable)")
	reason := flag.String("reason", "", "the reason --deny patterns give")
	rulesFile := flag.String("rules", "", `a rules file {"rules": [{"pattern", "reason", "surfaces"}]}`)
	flag.Parse()

	var rules []denylist.Rule
	for _, d := range deny {
		re, err := regexp.Compile(d)
		if err != nil {
			fail("--deny %q: %v", d, err)
		}
		rules = append(rules, denylist.Rule{Pattern: re, Reason: *reason, Surfaces: surfaces})
	}
	if *rulesFile != "" {
		data, err := os.ReadFile(*rulesFile)
		if err != nil {
			fail("%v", err)
		}
		more, err := denylist.ParseRules(data)
		if err != nil {
			fail("%s: %v", *rulesFile, err)
		}
		rules = append(rules, more...)
	}
	a, err := denylist.New(rules)
	if err != nil {
		fail("%v: give --deny REGEX or --rules FILE", err)
	}
	sdk.Serve(a)
}

// fail reports a configuration error on stderr, where the broker logs it,
// and exits before the handshake.
func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "courier-authz-denylist: "+format+"\n", args...)
	os.Exit(2)
}
