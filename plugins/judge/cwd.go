package judge

import (
	"strings"

	"github.com/seed6639df8c/courier/bashunits"
)

// The judge may allow a command only when it knows where the command runs,
// if that changes what the command does. cwdSensitive decides it from the
// units bashunits splits the complete input into, and errs towards "it
// does": a wrong "yes" costs a deferred allow, a wrong "no" lets a model
// allow `rm -rf build` without knowing which build.

// changesDir are builtins that move later commands elsewhere.
var changesDir = map[string]bool{"cd": true, "pushd": true, "popd": true}

// projectTools act on the project of the directory they run in: which
// repository `git push` pushes, whose package.json `npm test` runs.
var projectTools = map[string]bool{
	"git": true, "npm": true, "npx": true, "pnpm": true, "yarn": true, "bun": true,
	"make": true, "cargo": true, "go": true, "mvn": true, "gradle": true,
	"terraform": true, "docker-compose": true, "pip": true, "uv": true, "poetry": true,
	"bundle": true, "rake": true, "just": true, "pytest": true, "tox": true,
}

// fileOperands are commands whose plain operands are files: a bare `build`
// is ./build.
var fileOperands = map[string]bool{
	"rm": true, "rmdir": true, "unlink": true, "shred": true, "mv": true, "cp": true,
	"ln": true, "install": true, "rsync": true, "chmod": true, "chown": true, "chgrp": true,
	"touch": true, "mkdir": true, "truncate": true, "tee": true, "dd": true,
	"tar": true, "zip": true, "unzip": true, "find": true, "sed": true,
	"cat": true, "head": true, "tail": true, "less": true, "more": true, "grep": true,
	"source": true, ".": true, "bash": true, "sh": true, "python": true, "python3": true,
	"node": true, "perl": true, "ruby": true, "patch": true, "diff": true,
}

// readsDir are commands that read the working directory when given no
// operand.
var readsDir = map[string]bool{
	"ls": true, "pwd": true, "find": true, "du": true, "tree": true, "dir": true,
}

// cwdSensitive reports whether what line does depends on its working
// directory, and why in a few words (for the review log): any unit the
// parser could not see through, a directory change, a project tool, a
// glob, a relative path-like word, a plain operand of a file command, or a
// directory lister without operands.
func cwdSensitive(line string) (bool, string) {
	for _, u := range bashunits.Split(line) {
		if why := unitCwd(u); why != "" {
			return true, why
		}
	}
	return false, ""
}

// unitCwd is why u depends on its working directory, "" when it does not.
func unitCwd(u bashunits.Unit) string {
	if u.Floor != "" {
		return "a command the parser cannot see through"
	}
	name := u.Name
	if i := strings.LastIndexByte(name, '/'); i >= 0 && strings.HasPrefix(name, "/") {
		name = name[i+1:]
	}
	switch {
	case changesDir[name]:
		return name + " changes directory"
	case projectTools[name]:
		return name + " acts on the project of its directory"
	}
	for _, w := range u.Words {
		if strings.ContainsAny(w, "*?[") {
			return "a glob"
		}
		if relativePath(optionValue(w)) {
			return "a relative path"
		}
	}
	if len(u.Args) == 0 {
		return ""
	}
	operands := 0
	for _, a := range u.Args[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		operands++
		if fileOperands[name] && !anchored(a) {
			return name + " with a relative operand"
		}
	}
	if readsDir[name] && operands == 0 {
		return name + " reads the working directory"
	}
	return ""
}

// optionValue is the value of an option word `--out=build/x`, or w.
func optionValue(w string) string {
	if strings.HasPrefix(w, "-") {
		if i := strings.IndexByte(w, '='); i >= 0 {
			return w[i+1:]
		}
	}
	return w
}

// relativePath reports whether w reads as a path that is not anchored at
// the root or a home directory: `.`, `..`, `./x`, `a/b`, `$DIR/x` (an
// expansion may be anything). A URL is not a path.
func relativePath(w string) bool {
	switch {
	case w == "." || w == "..":
		return true
	case strings.HasPrefix(w, "./") || strings.HasPrefix(w, "../"):
		return true
	case strings.Contains(w, "://"):
		return false
	case strings.Contains(w, "/"):
		return !anchored(w)
	}
	return false
}

// anchored reports whether w names a place independent of the working
// directory: an absolute path or a home directory (`~`, `~/x`, `~user/x`,
// `$HOME/x`). An option word is not a place at all.
func anchored(w string) bool {
	switch {
	case strings.HasPrefix(w, "/"), strings.HasPrefix(w, "~"):
		return true
	case strings.HasPrefix(w, bashunits.Mark+"$HOME"+bashunits.Mark+"/"),
		strings.HasPrefix(w, bashunits.Mark+"${HOME}"+bashunits.Mark+"/"):
		return true
	}
	return false
}
