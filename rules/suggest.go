package rules

import (
	"os"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/seed6639df8c/courier/bashunits"
	"github.com/seed6639df8c/courier/wire"
)

// The suggestion rules: what "yes, for this session" offers to record for
// an ask. The child suggests with them (package forward) and the broker
// admits a suggested grant only if it is no wider than what they give for
// a value that was asked (see [Policy.AdmitGrants]), so both sides share
// this one home.

// SuggestBashGrants is the "yes, for this session" suggestion for a bash
// command line: one grant per unit a rule may judge (a floored unit runs
// what no pattern can see, so it gets none), each built from that unit
// alone (see SuggestGrant), without repeats. It is empty when no unit
// yields a grant.
func SuggestBashGrants(units []bashunits.Unit) []wire.SuggestedGrant {
	var out []wire.SuggestedGrant
	for _, u := range units {
		if u.Floor != "" {
			continue
		}
		p := suggestBash(u.Command)
		if p == "" || slices.ContainsFunc(out, func(g wire.SuggestedGrant) bool { return g.Pattern == p }) {
			continue
		}
		out = append(out, wire.SuggestedGrant{Surface: "bash", Pattern: p})
	}
	return out
}

// subcommandTools take a subcommand as their second word: their
// suggestion keeps it (`git status --short` → `git status *`,
// `terraform apply` → `terraform apply *`, never `terraform *`).
var subcommandTools = map[string]bool{
	"git": true, "npm": true, "pnpm": true, "yarn": true, "bun": true, "deno": true,
	"cargo": true, "go": true, "rustup": true, "dotnet": true, "mvn": true, "gradle": true,
	"docker": true, "podman": true, "kubectl": true, "helm": true, "terraform": true,
	"tofu": true, "pulumi": true, "aws": true, "gcloud": true, "az": true, "gh": true,
	"pip": true, "pip3": true, "uv": true, "poetry": true, "pipx": true, "conda": true,
	"make": true, "systemctl": true, "brew": true, "apt": true, "apt-get": true,
	"dnf": true, "yum": true, "nix": true, "composer": true, "bundle": true, "gem": true,
	"rails": true, "swift": true, "hg": true, "svn": true, "jj": true,
}

// scriptRunners take a script name after "run": their suggestion keeps the
// script (`npm run dev` → `npm run dev*`).
var scriptRunners = map[string]bool{"npm": true, "pnpm": true, "yarn": true, "bun": true}

// SuggestGrant is the default "yes, for this session" grant for an ask,
// following pi's suggestions: on bash a command-arity table (`git status
// --short` → `git status *`, `npm run dev` → `npm run dev*`, unknown
// commands → `cmd *`; see suggestBash); on the path and external_directory
// surfaces the directory glob of the lexically cleaned path (`src/*`);
// elsewhere the value itself.
//
// The pattern is empty when no grant is safe: a bash unit whose leading
// words are not plain, a value (or on a path surface its directory) that
// holds a wildcard, which would make the grant cover more than was asked.
// Some path cases get the exact path instead of a directory glob: a file
// directly under `/`, in a top-level directory (`/etc/x`, `/home/ada`)
// or in the home directory, whose glob would cover far more than one
// project (`/etc/*`, `/home/*`, `~/*`), and a bare relative name, whose
// directory is unknown. Shells, interpreters and wrappers get the exact
// unit on bash (see exactUnitCommands).
func SuggestGrant(surface, value string) wire.SuggestedGrant {
	g := wire.SuggestedGrant{Surface: surface}
	switch {
	case surface == "bash":
		g.Pattern = suggestBash(value)
	case suggestsDirectory(surface):
		clean := cleanPath(value)
		dir := path.Dir(clean)
		switch {
		case strings.ContainsAny(clean, "*?"):
		case exactDirectory(dir):
			g.Pattern = clean
		default:
			g.Pattern = dir + "/*"
		}
	case !strings.ContainsAny(value, "*?"):
		g.Pattern = value
	}
	return g
}

// suggestsDirectory reports whether SuggestGrant offers a directory glob
// on surface: the path and external_directory families, as the child's
// gate names them.
func suggestsDirectory(surface string) bool {
	return strings.HasPrefix(surface, "path") || strings.HasPrefix(surface, "external_directory")
}

// suggestBash builds the pattern for one unit, from its leading plain
// words only: a word with a quote, an escape, an expansion, a glob or an
// assignment could make the pattern mean more (or other) than the unit.
// A subcommand tool keeps its subcommand; one whose second word is not a
// plain subcommand (`git -C x status`) gets the unit itself as the
// pattern, since `git *` would span every subcommand. It is empty when no
// safe pattern exists.
func suggestBash(unit string) string {
	words := strings.Fields(unit)
	if len(words) == 0 || !plainWord(words[0]) || strings.HasPrefix(words[0], "-") {
		return ""
	}
	name := words[0]
	if exactUnit(path.Base(name)) {
		// `bash *` would run any script, `npx *` any package.
		if slices.ContainsFunc(words, func(w string) bool { return !plainWord(w) }) {
			return ""
		}
		return strings.Join(words, " ")
	}
	if name == "bun" && len(words) >= 2 && words[1] == "x" {
		return "" // bun x runs any package; `bun x *` would approve all
	}
	switch {
	case len(words) >= 3 && scriptRunners[name] && words[1] == "run" && plainWord(words[2]) && !strings.HasPrefix(words[2], "-"):
		return strings.Join(words[:3], " ") + "*"
	case subcommandTools[name] && len(words) >= 2:
		if plainWord(words[1]) && !strings.HasPrefix(words[1], "-") {
			return strings.Join(words[:2], " ") + " *"
		}
		if !slices.ContainsFunc(words, func(w string) bool { return !plainWord(w) }) {
			return strings.Join(words, " ")
		}
		return ""
	}
	return name + " *"
}

// plainWord reports whether w is made only of characters that mean
// themselves both to bash and to a pattern.
func plainWord(w string) bool {
	for _, c := range w {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.ContainsRune("._/+@%:,-", c):
		default:
			return false
		}
	}
	return w != ""
}

// exactUnitCommands run a program their arguments name (a script, a
// package, another command, a string of code): their suggestion is the
// unit itself, never `name *`. It is the one list of them the suggestion
// rules keep; bashunits floors some of the same when their program is a
// string.
var exactUnitCommands = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true,
	"fish": true, "csh": true, "tcsh": true, "source": true, ".": true, "eval": true, "exec": true,
	"env": true, "xargs": true, "sudo": true, "doas": true, "su": true, "nohup": true, "time": true,
	"timeout": true, "nice": true, "ionice": true, "setsid": true, "stdbuf": true, "command": true,
	"builtin": true, "watch": true, "parallel": true, "flock": true, "chroot": true,
	"awk": true, "gawk": true, "mawk": true, "nawk": true, "perl": true, "ruby": true,
	"node": true, "nodejs": true, "deno": true, "npx": true, "pnpx": true, "bunx": true,
	"php": true, "lua": true, "Rscript": true, "osascript": true, "tclsh": true,
}

// exactUnit reports whether name's suggestion is the exact unit: a name
// of exactUnitCommands or a python (`python`, `python3.12`).
func exactUnit(name string) bool {
	return exactUnitCommands[name] || strings.HasPrefix(name, "python") || strings.HasPrefix(name, "pypy")
}

// exactDirectory reports whether a path in dir gets the exact path as its
// suggestion: `/`, a top-level directory, `.` (unknown), the home
// directory.
func exactDirectory(dir string) bool {
	if dir == "/" || dir == "." || dir == "~" || dir == "$HOME" || dir == "${HOME}" {
		return true
	}
	if strings.Count(dir, "/") == 1 && strings.HasPrefix(dir, "/") {
		return true
	}
	home := userHome()
	return home != "" && dir == path.Clean(home)
}

// userHome is the home directory, looked up once: the child and the
// broker run as the same user, so both sides suggest the same.
var userHome = sync.OnceValue(func() string {
	h, _ := os.UserHomeDir()
	return h
})
