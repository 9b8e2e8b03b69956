// Command courier-authz-readonly is an example courier authorizer plugin:
// it allows bash asks made only of known read-only commands with plain
// arguments (ls, cat, grep, head, wc, ...) and defers everything else. It
// never denies, and the broker caps its allows on path asks anyway.
//
// The operator configures it in the link's "args":
//
//	{"name": "readonly", "path": "/usr/local/libexec/courier/courier-authz-readonly",
//	 "sha256": "<sha256sum of the binary>", "args": ["--git", "--allow", "jq"]}
//
// Flags:
//
//	--git            also allow git status, log, diff, show, rev-parse,
//	                 ls-files and blame (a repository's config can run
//	                 programs through them: only for trusted repositories)
//	--allow NAME     also allow command NAME with any plain arguments (repeatable)
//	--no-defaults    allow only what --git and --allow name
//
// Read-only is not harmless: cat reads secrets too. Put a deny-list link
// before this one for what must never be read.
package main

import (
	"flag"
	"fmt"

	"github.com/seed6639df8c/courier/plugins/readonly"
	"github.com/seed6639df8c/courier/plugins/sdk"
)

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return fmt.Sprint(*m) }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	var extra multi
	flag.Var(&extra, "allow", "also allow this command name (repeatable)")
	git := flag.Bool("git", false, "also allow git's reading subcommands")
	noDefaults := flag.Bool("no-defaults", false, "allow only what --git and --allow name")
	flag.Parse()
	sdk.Serve(readonly.New(readonly.Options{NoDefaults: *noDefaults, Git: *git, Extra: extra}))
}
