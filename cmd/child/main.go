// Command child is the subagent side of courier: it forwards one
// permission ask to the parent session's broker and prints the decision.
//
// Exit status: 0 allowed, 1 denied, 3 unavailable (nobody could answer),
// 2 usage or configuration error.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: child ask [flags]

Forwards one permission ask to the parent session's broker through the
mailbox and prints the decision as JSON (not implemented yet).

Exit status: 0 allowed, 1 denied, 3 unavailable (nobody could answer),
2 usage or configuration error.
`

const exitUsage = 2

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help", "help":
			fmt.Fprint(stdout, usage)
			return 0
		case "ask":
			fmt.Fprintln(stderr, "child: ask is not implemented yet")
			return exitUsage
		}
	}
	fmt.Fprint(stderr, usage)
	return exitUsage
}
