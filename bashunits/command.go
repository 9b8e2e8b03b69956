package bashunits

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word is what commandFloor needs of a word: its literal value, whether
// it has one (no expansion), and whether bash would glob or brace-expand
// it.
type word struct {
	lit     string
	ok      bool
	expands bool
}

// commandFloor judges what a simple command runs by its name.
func commandFloor(args []word) (floor, why string) {
	if !args[0].ok || args[0].expands {
		return FloorUnparsed, "the command name is computed at run time"
	}
	base := path.Base(args[0].lit)
	switch {
	case base == "eval" || base == "trap":
		return FloorOpaque, "runs a string as a command: " + base
	case interpreters[base]:
		for _, a := range args[1:] {
			if !a.ok {
				return FloorOpaque, "an interpreter whose arguments are computed: " + base
			}
			if programFlags[a.lit] {
				return FloorOpaque, "an interpreter running a program given as a string: " + base + " " + a.lit
			}
		}
		if allOptions(args[1:]) {
			return FloorOpaque, "an interpreter reading its program from stdin: " + base
		}
	case shells[base]:
		// Erring towards the floor: any option cluster with c or s, or a
		// word that is not literal, anywhere in the arguments.
		for _, a := range args[1:] {
			if !a.ok {
				return FloorOpaque, "a shell whose arguments are computed: " + base
			}
			if v := a.lit; len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.ContainsAny(v, "cs") {
				return FloorOpaque, "a shell running a command string: " + base + " " + v
			}
		}
		if allOptions(args[1:]) {
			return FloorOpaque, "a shell reading its commands from stdin: " + base
		}
	case wrappers[base]:
		return FloorIndirection, "runs another command: " + base
	case base == "find":
		for _, a := range args[1:] {
			if !a.ok || findRunners[a.lit] {
				return FloorIndirection, "runs another command: find " + a.lit
			}
		}
	}
	return "", ""
}

// expands reports whether bash would turn w into other words: an unquoted
// glob (`/???/r?`) or brace expansion (`{rm,-rf,~}`).
func expands(w *syntax.Word) bool {
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			continue
		}
		open := strings.IndexByte(l.Value, '[')
		if strings.ContainsAny(l.Value, "*?") || open >= 0 && strings.IndexByte(l.Value[open:], ']') > 0 ||
			strings.Contains(l.Value, "{") && (strings.Contains(l.Value, ",") || strings.Contains(l.Value, "..")) {
			return true
		}
	}
	return false
}

func allOptions(args []word) bool {
	for _, a := range args {
		if !a.ok || !strings.HasPrefix(a.lit, "-") {
			return false
		}
	}
	return true
}

// shells run a program given as a string (-c) or on stdin.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true,
	"ash": true, "fish": true, "csh": true, "tcsh": true,
}

// interpreters run a program given as a string (programFlags) or read
// from stdin when given no script.
var interpreters = map[string]bool{
	"python": true, "python2": true, "python3": true, "node": true, "nodejs": true,
	"perl": true, "ruby": true, "php": true, "lua": true, "tclsh": true, "osascript": true,
}

// programFlags take the program itself as their argument.
var programFlags = map[string]bool{
	"-c": true, "-e": true, "-E": true, "-p": true, "-r": true, "--eval": true, "--print": true,
}

// wrappers run the command given in their arguments.
var wrappers = map[string]bool{
	"sudo": true, "doas": true, "su": true, "runuser": true, "pkexec": true,
	"env": true, "nice": true, "ionice": true, "chrt": true, "taskset": true,
	"timeout": true, "nohup": true, "setsid": true, "stdbuf": true, "unbuffer": true,
	"xargs": true, "parallel": true, "watch": true, "flock": true, "time": true,
	"exec": true, "command": true, "builtin": true, "chroot": true,
	"unshare": true, "nsenter": true, "strace": true, "ltrace": true,
	"script": true, "ssh": true, "busybox": true, "enable": true, "firejail": true, "systemd-run": true,
}

// findRunners are the find actions that run a command.
var findRunners = map[string]bool{"-exec": true, "-execdir": true, "-ok": true, "-okdir": true}
