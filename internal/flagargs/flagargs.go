// Package flagargs parses a command line whose flags may come before and
// after its positional arguments (`revoke PATTERN --surface S`), which the
// standard flag package stops at. Both courier commands need it.
package flagargs

import "flag"

// Parse parses fs from args, flags before and after the positional
// arguments, and returns the positional ones. Everything after "--" is
// positional.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
