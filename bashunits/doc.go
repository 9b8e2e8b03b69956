// Package bashunits turns a bash command line into the units a permission
// rule can judge: one simple command each, with its words as written.
//
// A rule pattern such as `git status *` is written for one command. A
// command line is often more: `git status && rm -rf ~`, `curl x | sh`,
// `git status $(curl x)`. Matched as one string, `*` swallows the
// operators and the rule allows all of it. So courier splits the line with
// a real shell parser (mvdan.cc/sh/v3/syntax, in bash mode; nothing is
// expanded or executed) and judges every unit; an allow needs every unit
// allowed, and the most restrictive answer wins.
//
// # What becomes a unit
//
// Every simple command, wherever it sits: in a list (`;`, `&&`, `||`, `&`,
// newlines), a pipeline, a subshell or group, the condition or body of
// `if`, `while`, `until`, `for` and `case`, a function body, a `time` or
// `coproc` clause, and inside any command substitution (`$(…)`, backticks)
// or process substitution (`<(…)`, `>(…)`), here-document bodies included.
// A command that hosts a substitution is a unit too, written with the
// substitution in it: `git status $(curl x)` is the two units
// `git status $(curl x)` and `curl x`. Declarations (`export`, `local`,
// `declare`…) and `[[ … ]]` tests are units as well.
//
// A unit's [Unit.Command] is its assignments, words and redirections as
// written, in source order, separated by one space; a here-document is
// shown by its operator and delimiter (its body's substitutions are units
// of their own). Nothing is silently dropped: an assignment in front of a
// command stays, so `FOO=$(rm -rf ~) git status` is not `git status`.
//
// # Floors
//
// What the parser cannot see through keeps its unit an ask, whatever a
// rule says (only a session grant outranks a floor). The sentinels are
// pi's, plus one of courier's own:
//
//   - [FloorOpaque] `<opaque-bash-wrapper>`: a shell or an interpreter
//     runs a program held in a string or read from stdin (`sh -c`,
//     `bash -c`, `eval`, `trap`, `python3 -c`, `node -e`, a bare `sh` or
//     `python3` at the end of a pipe);
//   - [FloorIndirection] `<indirection-bash-wrapper>`: a wrapper runs
//     another command (`sudo`, `env`, `xargs`, `nice`, `timeout`, `exec`,
//     `command`, `builtin`, `nohup`, `find -exec`…);
//   - [FloorUnparsed] `<unparsed-bash-subtree>`: a command name that is
//     computed (`$CMD`, `$(which git) status`, a glob `/???/r?` or a brace
//     expansion `{rm,-rf,~}`), or arithmetic, which bash
//     may evaluate into a command substitution at run time (`$((x))`,
//     `((…))`, `let`, `${a[i]}`, `${a:i}`, `[[ a -eq b ]]`);
//   - [FloorUnparseable] `<unparseable-bash-command>`: the line does not
//     parse, is empty, holds a NUL byte (an argv ends there, so what runs
//     is not what was judged), has more than [MaxUnits] commands, or is
//     too large or too deeply nested to parse safely; the whole line is
//     then the one unit;
//   - [FloorWritesFile] `<file-writing-redirection>`: a redirection that
//     writes a file (`>`, `>>`, `&>`, `&>>`, `>|`, `<>`, `>&file`), except
//     to /dev/null, /dev/stdout and /dev/stderr. [Unit.Writes] names the
//     targets so a prompt can show them: `git status > ~/.bashrc` is not
//     `git status`.
//
// A redirection that writes a file from a compound command
// (`{ a; b; } > f`) is a unit of its own, made of the redirections.
//
// # What a parse cannot see
//
// The units are judged as text. The state of the shell that will run them
// is not visible: an alias, a function, an exported variable or a PATH
// set by an earlier command (in an agent whose shell persists between
// calls) can make an allowed `git status` run something else. Each of
// those earlier commands was itself an ask.
//
// # Words
//
// [Unit.Words] are the unit's words with quotes and escapes removed and
// expansions left as written (`"$HOME"/.pi` is `$HOME/.pi`): its
// arguments, its assignments' values and its redirection targets, not the
// substitutions (units of their own) nor here-document bodies.
// [Unit.Name] is the command name in the same form. The self-approval
// guard reads them for paths, whatever the quoting.
//
// # Literal form
//
// [Unit.Literal] is the command with its quotes and escapes removed, when
// every word is literal: `'rm' -rf ~` is literally `rm -rf ~`. A matcher
// should judge both spellings and keep the more restrictive answer, so
// quoting cannot step around a deny rule.
package bashunits
