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

// noPathOperands are commands none of whose operands is a file: every
// other command's plain operand may be a relative path (`rm build`,
// `kubectl delete -f manifest.yaml`, `psql -f x.sql`, an awk program that
// runs `rm build`), since no list of the commands that take files can be
// complete, and a command missing from it would let a model allow a
// relative path without a working directory.
var noPathOperands = map[string]bool{
	"echo": true, "printf": true, "true": true, "false": true, ":": true,
	"sleep": true, "date": true, "uname": true, "whoami": true, "id": true,
	"hostname": true, "seq": true, "yes": true, "expr": true,
	"basename": true, "dirname": true, "which": true, "type": true,
	"kill": true, "pkill": true, "killall": true, "exit": true,
	"set": true, "unset": true, "shift": true, "wait": true, "jobs": true,
}

// writesDir are commands that write into the working directory whatever
// their operands say: a download, an archive unpacked.
var writesDir = map[string]bool{
	"wget": true, "unzip": true, "7z": true, "7za": true, "unrar": true,
	"cpio": true, "aria2c": true,
}

// readsDir are commands that read the working directory when given no
// operand.
var readsDir = map[string]bool{
	"ls": true, "pwd": true, "find": true, "du": true, "tree": true, "dir": true,
}

// cwdSensitive reports whether what line does depends on its working
// directory, and why in a few words (for the review log): any unit the
// parser could not see through, a directory change, a project tool, a
// command that writes into its directory (a download, an unpacked
// archive), a glob, $PWD, a relative path-like word (a tilde bash does not
// expand to a home directory among them), a plain operand that is not
// anchored (of any command but those of noPathOperands), or a directory
// lister without operands.
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
	case writesDir[name]:
		return name + " writes into its working directory"
	case name == "curl" && curlRemoteName(u.Args):
		return "curl -O writes into its working directory"
	}
	for _, w := range u.Words {
		if strings.ContainsAny(w, "*?[") {
			return "a glob"
		}
		if namesCwd(w) {
			return "$PWD or $OLDPWD"
		}
		// An option's value (`--out=~/x`) is not a place bash expands a
		// tilde in: only an assignment's is, and a word of its own.
		if v := optionValue(w); relativePath(v) || strings.HasPrefix(v, "~") && (v != w || !homeTilde(u.Command, u.Words, v)) {
			return "a relative path"
		}
	}
	if len(u.Args) == 0 {
		return ""
	}
	operands, ended := 0, false
	for _, a := range u.Args[1:] {
		if !ended && a == "--" {
			ended = true // what follows is operands, however it starts
			continue
		}
		if !ended && strings.HasPrefix(a, "-") {
			continue
		}
		operands++
		if !noPathOperands[name] && !strings.Contains(a, "://") && !(anchored(a) && (!strings.HasPrefix(a, "~") || homeTilde(u.Command, u.Words, a))) {
			return name + " with a relative operand"
		}
	}
	if readsDir[name] && operands == 0 {
		return name + " reads the working directory"
	}
	return ""
}

// curlRemoteName reports whether curl's arguments name its output after
// the URL, in the working directory: -O, -J or --remote-name, alone or in
// a cluster of short options (errs towards yes: -XPOST counts).
func curlRemoteName(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--remote-name", a == "--remote-name-all", a == "--remote-header-name", strings.HasPrefix(a, "--output-dir"):
			return true
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsAny(a[1:], "OJ"):
			return true
		}
	}
	return false
}

// namesCwd reports whether w expands $PWD or $OLDPWD, which make even an
// absolute-looking path (`/tmp/../$PWD`) the working directory.
func namesCwd(w string) bool {
	for _, v := range []string{"$PWD", "${PWD", "$OLDPWD", "${OLDPWD"} {
		if strings.Contains(w, v) {
			return true
		}
	}
	return false
}

// homeTilde reports whether the word w of a unit, which starts with `~`,
// is a home directory as bash expands it: its tilde prefix (up to the
// first slash) is `~` or `~user`, not `~+` ($PWD) or `~-` ($OLDPWD), and
// no character of the prefix was quoted or escaped. words are the unit's
// words with their quotes removed and command is the unit as written, so
// the prefix was unquoted only if the word appears there verbatim, a word
// of its own (as often as the unit has it): `'~/x'` and `\~/x` are a
// directory named ~ in the working directory.
func homeTilde(command string, words []string, w string) bool {
	prefix, _, _ := strings.Cut(w, "/")
	if prefix == "~-" {
		return false
	}
	for _, c := range prefix[1:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	want := 0
	for _, x := range words {
		if x == w {
			want++
		}
	}
	return verbatim(command, w) >= max(want, 1)
}

// verbatim counts the occurrences of w in command as a word of its own:
// preceded by the start, a blank or `=` (an assignment's value), and
// followed by the end or a blank.
func verbatim(command, w string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(command[i:], w)
		if j < 0 {
			return n
		}
		at, end := i+j, i+j+len(w)
		if (at == 0 || command[at-1] == ' ' || command[at-1] == '=') && (end == len(command) || command[end] == ' ') {
			n++
		}
		i = at + 1
	}
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
