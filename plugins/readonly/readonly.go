// Package readonly is an example authorizer: it allows bash asks whose
// every command is a known read-only one with plain arguments, and defers
// everything else. It never denies.
//
// "Read-only" means the command does not change files or state; it does
// not mean harmless: cat can read a secret. Put a deny-list link before it
// for what must never be read. cmd/courier-authz-readonly serves it.
//
// It allows only on the child-fixed facts: an ask without them (a pi
// 20.x child), with a floor sentinel (the child could not see through the
// command), or with anything shell-like in a command (quotes, expansions,
// redirections, globs, chaining) defers.
package readonly

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/plugins/protocol"
)

// argCheck vets a command's arguments; nil allows any plain arguments.
type argCheck func(args []string) bool

// refuse rejects arguments that start with one of prefixes.
func refuse(prefixes ...string) argCheck {
	return func(args []string) bool {
		for _, a := range args {
			for _, p := range prefixes {
				if strings.HasPrefix(a, p) {
					return false
				}
			}
		}
		return true
	}
}

// defaultCommands are read-only whatever their plain arguments, except
// for the options refused.
var defaultCommands = map[string]argCheck{
	"pwd": nil, "ls": nil, "cat": nil, "head": nil, "tail": nil, "wc": nil,
	"grep": nil, "stat": nil, "file": nil, "du": nil, "df": nil, "which": nil,
	"whoami": nil, "id": nil, "uname": nil, "echo": nil, "basename": nil,
	"dirname": nil, "realpath": nil, "cut": nil, "nl": nil, "tac": nil,
	"rev": nil, "true": nil,
	"tree": refuse("-o"),             // -o FILE writes the listing
	"sort": refuse("-o", "--output"), // sort -o FILE writes
}

// gitSubcommands are git's reading subcommands, allowed with --git. A
// repository's own config can still run programs (diff drivers, textconv,
// fsmonitor), so this trusts the repositories the agents work in.
var gitSubcommands = map[string]argCheck{
	"status":    nil,
	"log":       refuse("--output", "--ext-diff", "-c"),
	"diff":      refuse("--output", "--ext-diff", "-c"),
	"show":      refuse("--output", "--ext-diff", "-c"),
	"rev-parse": nil,
	"ls-files":  nil,
	"blame":     refuse("--contents", "-S"),
}

// shellChars mark a command this package does not try to understand.
const shellChars = ";&|<>`$(){}[]*?!~\\\"'#=\n\r\t%^"

// Options choose the allowed commands.
type Options struct {
	// NoDefaults drops the built-in command list.
	NoDefaults bool
	// Git allows git's reading subcommands.
	Git bool
	// Extra are more command names allowed with any plain arguments.
	Extra []string
}

// Authorizer allows read-only bash asks. It is safe for concurrent use.
type Authorizer struct {
	commands map[string]argCheck
	git      bool
}

// New returns a read-only allow-list.
func New(o Options) *Authorizer {
	a := &Authorizer{commands: map[string]argCheck{}, git: o.Git}
	if !o.NoDefaults {
		for k, v := range defaultCommands {
			a.commands[k] = v
		}
	}
	for _, c := range o.Extra {
		a.commands[c] = nil
	}
	return a
}

// Describe names the plugin.
func (a *Authorizer) Describe(context.Context) (protocol.Description, error) {
	return protocol.Description{
		Name:    "courier-authz-readonly",
		Version: "1",
		Summary: fmt.Sprintf("allows %d read-only commands (git: %v) on bash asks; defers otherwise; never denies", len(a.commands), a.git),
	}, nil
}

// Authorize allows when every command of a bash ask is read-only.
func (a *Authorizer) Authorize(_ context.Context, ev authorizer.Evidence) (authorizer.Verdict, error) {
	defer_ := authorizer.Verdict{Kind: authorizer.Defer}
	facts := ev.Access
	if facts == nil || facts.Surface != "bash" || facts.Floor != "" || len(facts.MatchValues) == 0 {
		return defer_, nil
	}
	commands := slices.Clone(facts.MatchValues)
	for _, u := range facts.AskingUnits {
		if u.Floor != "" {
			return defer_, nil
		}
		commands = append(commands, u.Command)
	}
	if ev.Surface == "bash" && ev.Value != "" {
		// the whole command line, so a chained command cannot ride along
		commands = append(commands, ev.Value)
	}
	for _, c := range commands {
		if !a.ReadOnly(c) {
			return defer_, nil
		}
	}
	return authorizer.Verdict{Kind: authorizer.Allow}, nil
}

// ReadOnly reports whether command is one plain read-only command.
func (a *Authorizer) ReadOnly(command string) bool {
	if strings.ContainsAny(command, shellChars) {
		return false
	}
	words := strings.Fields(command)
	if len(words) == 0 {
		return false
	}
	if words[0] == "git" {
		if !a.git || len(words) < 2 {
			return false
		}
		check, ok := gitSubcommands[words[1]]
		return ok && (check == nil || check(words[2:]))
	}
	check, ok := a.commands[words[0]]
	return ok && (check == nil || check(words[1:]))
}
