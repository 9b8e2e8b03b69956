// Package rules is the broker's recorded authority: pi's permission config,
// its wildcard matcher, the composition of config, agent and session rules,
// yolo mode, the built-in self-approval guard, and the explanation behind
// `broker check`. It is pure logic: it reads its config file and nothing
// else, and never touches the mailbox.
//
// The serve loop builds a [Policy] from a [Config] and asks it about each
// forwarded request that carries an access intent:
//
//	cfg, err := rules.Load(path)            // "" loads the embedded default
//	policy, err := rules.NewPolicy(cfg, rules.Options{Home: home, Protected: []string{root, agentDir}})
//	d := policy.Resolve(rules.QueryFromIntent(req.AccessIntent))
//	switch d.Action {
//	case rules.Allow, rules.Deny:            // answer now, decidedBy d.DecidedBy()
//	case rules.Ask:                          // on to the authorizer chain, then the terminal
//	}
//
// # Configuration
//
// The config is JSON. Its `permission` object is pi's format, unchanged: a
// surface key maps to an action (`"allow"`, `"ask"` or `"deny"`) for the
// whole surface, or to a map from patterns to actions, where an action may
// also be `{"action":"deny","reason":"..."}` (a reason is valid for deny
// only). `permission["*"]` is the action when nothing matches (ask if it is
// omitted). The other keys are `agents` (`{"<name>": {"permission":
// {...}, "users": [...]}}`, overrides for asks whose principal agent name
// is exactly <name>, and the user names or uids they are vouched for in
// isolation mode), `yoloMode` (default false), `forwardingTimeoutMs` (≥ 1, default
// 600000), `reviewLogFieldMaxWidth` (≥ 1, default 1000),
// `reviewLogMaxBytes` (courier's: ≥ 1024, default 64 MiB, the size at
// which the review log is rotated) and `promptTimeoutMs` (≥ 0, 0 means no
// limit). The integer knobs are at most 2^31-1, JavaScript's timer limit.
//
// A config with any mistake is refused whole, with every problem named by
// file, line, column (in characters), the value's path and what was
// expected:
//
//	config.json:7:16: permission.bash["git *"]: expected "allow", "ask", "deny" or {"action":"deny","reason":...}, got "alow"
//
// Keys repeated in any letter case are an error anywhere in the document,
// as in the mailbox readers (docs/decisions/0001). So is an unknown key
// wherever courier defines the shape: at the top level, in an agent entry,
// a deny object or an authorizer link, with "did you mean" when a known
// key is close (issue 14: "permisson" under yoloMode allowed every ask).
// pi-permission-system's own settings that courier does not read are
// accepted, each reported as one of the [Config.Warnings], so a pi user's
// config still loads. A surface key that is a known surface but for letter
// case or a slip of one or two edits (`path_wirte`) is an error; any other
// unknown surface is read as a tool's name, with a warning (an MCP or
// custom tool courier cannot know). A config without a permission object
// has no rules, which a warning says; with yoloMode true it is an error.
// Every problem and warning is reported at once ([ConfigError]).
// docs/CONFIG.md is the reference of every key, checked against this
// parser by its tests. [LoadFile] refuses a file that group or others may write, that a user
// other than the broker's or root owns, or whose directory lets others
// replace it.
//
// Key order is meaning: within a pattern map the last matching pattern
// wins. pi reads the file with JSON.parse, and a JavaScript object lists
// integer-like keys ("7", "123") first, in numeric order, before the other
// keys in file order. courier replicates that, so one file means the same
// thing to both, and warns about every integer-like key whose place moved.
//
// The bare `path` and `external_directory` keys are sugar for their `_read`
// and `_write` members: a member receives the sugar's patterns
// first and its own explicit patterns after them, whatever the order in
// the file, and a pattern it redefines appears once, at its own place.
//
// # Matching
//
// See [Pattern]: anchored, `*` crosses `/` and newlines, `?` is one
// character, everything else literal, a trailing ` *` also matches the
// bare command (`git *` matches `git`), and `~`, `$HOME`, `${HOME}`
// prefixes expand. The surface key is matched as a pattern too, so
// `"mcp_*"` covers every MCP tool.
//
// # Composition and resolution
//
// The config is composed as default → global rules → the asking agent's
// rules, and scanned from the end: the last rule that matches gives the
// config's answer. An agent's own `"*"` replaces the default for that
// agent only. Under yolo mode every ask rule, the default included, is
// rewritten to allow with origin yolo; denies stay. Session grants come
// after: a matching grant decides unless the config's answer is a deny,
// which a grant never overrides (docs/decisions/0011-deny-above-grants.md).
//
// The agent name is the child's claim ([AgentTrust]). In same-uid mode
// nothing can check it, and the agent's rules apply as claimed. In
// isolation mode ([Query.Isolated]) the broker knows the requesting uid,
// and the agent's rules apply as written only for a uid in the agent's
// `users`; for any other uid the answer is the stricter of the one
// without the agent's rules and the one with them, unit by unit on bash,
// so they may narrow an answer but never widen it.
//
// [Policy.Resolve] follows pi's serving policy (ResolverServingPolicy):
//
//   - on a path surface (the path-bearing tools read, write, edit, find,
//     grep, ls; path and external_directory and their members) the match
//     values are aliases of one path, cleaned lexically (`..`, `.`, `//`,
//     a trailing slash; never joined with the broker's directory): a deny
//     on any alias or the boundary value denies, an allow needs the
//     canonical path (the boundary value, else every alias) allowed, and
//     anything else asks (docs/decisions/0012-path-aliases.md);
//   - several values on any other surface are resolved one by one and the
//     most restrictive answer wins (deny > ask > allow; the first on a tie);
//   - a bare `path` or `external_directory` query is resolved on its _read
//     and _write members, most restrictive wins;
//   - a child floor turns an allow that is not a session grant into an ask,
//     or under yolo into an allow by yolo whose pattern is the floor;
//   - on bash every value, and every asking unit, is split into its
//     simple commands (package bashunits) and each is resolved alone, as
//     written and with its quotes removed, with its own floor or else the
//     one it came with; the most restrictive answer wins. With asking
//     units the match values and the chain-level floor are not consulted.
//     A floor found in the command itself stands over a session grant; the
//     child's floor does not (docs/decisions/0010-bash-units.md).
//
// The answer's [Resolution.DecidedBy] is `session_approval` for a session
// grant, `yolo` for yolo mode, otherwise `rule` with the origin (default,
// global, agent, builtin). Its surface is the query's surface, as pi's
// serving node stamps it; its pattern is null for a surface-wide action
// and the default.
//
// # The self-approval guard
//
// A subagent able to write into the mailbox could write its own approval,
// and one able to write the agent directory, the broker's config or its
// grants journal could rewrite the rules that judge it. So an ask whose
// facts touch a protected tree ([Options]) is denied with origin builtin
// before any rule is consulted: session grants and yolo cannot override
// it.
//
//   - On path surfaces a match value or the boundary value is cleaned
//     (`~` expanded, a relative value placed in the requester's cwd) and
//     tested for containment.
//   - On bash every word of every unit (its arguments, assignment values
//     and redirection targets, quotes removed; package bashunits) is
//     tested the same way, whole and after its first `=` (`of=…`), with
//     `~`, `$HOME` and `${HOME}` expanded; a word starting with
//     `$PI_CODING_AGENT_DIR` hits outright; a relative word is placed in
//     the requester's cwd and in every directory the line cds to.
//   - On every other surface the path-like tokens of the value are.
//   - A value holding a glob (`*`, `?`, `[…]`, a brace list) hits when the
//     glob could name a path inside a tree, matched segment by segment.
//   - Off path surfaces, and in every asking unit, the values are also
//     searched for the trees' absolute, `~/`, `$HOME/` and `${HOME}/`
//     spellings: a blunt substring test that errs towards denying.
//   - After the rules, a bash unit that moves, removes or re-permissions an
//     ancestor of a tree (`mv ~/.pi /tmp/p`) is denied unless a rule
//     already denied it.
//
// The words are judged as text: a path built at run time from a variable
// an earlier command set, or a directory an earlier ask cd'd to, escapes
// the guard, which the child's own path gates must catch.
//
// # Session rules
//
// [SessionRules] holds the whole-session grants the operator gave at the
// broker, as allow rules with origin session, each on its own surface. At
// [WidthFamily] a directional grant is widened to its family, and a family
// grant is recorded on both members. [SessionRules.Snapshot] and
// [DecodeSnapshot] give the serve loop a stable JSON shape to journal and
// a loader that treats the journal as untrusted input.
//
// # The default configuration
//
// [Load] with no path uses an embedded default ([DefaultConfigJSON]), what
// an experienced user expects from a broker nobody configured:
//
//   - the default is ask;
//   - read-only commands are allowed: `pwd`, `ls *`, `git status *`,
//     `git diff *`, `git log *`, `git show *`, `git branch`,
//     `git branch --show-current`, `git rev-parse *`, `git remote -v`;
//     but any git command with `--output` (which writes a file) asks;
//   - destructive commands are denied with a teaching reason: force pushes
//     (`git push --force*`, `git push -f*`, and the flags after a remote),
//     `rm -rf` of `/`, of any absolute path and of the home directory,
//     `sudo`, `mkfs`, `dd` onto a device;
//   - reading or writing `~/.ssh`, `~/.gnupg` and `~/.aws` is denied.
//
// Bash patterns match one simple command: `ls; rm -rf x` is judged as
// `ls` and `rm -rf x`, never by `ls *` alone, whether or not the child
// sent its units.
//
// # Differences from pi
//
//   - A session grant never overrides a deny of the config; pi composes
//     session rules last (docs/decisions/0011-deny-above-grants.md).
//   - Path values are cleaned before matching, and across aliases the most
//     restrictive answer wins; pi lets the last rule matching any alias
//     decide (docs/decisions/0012-path-aliases.md).
//   - `?` matches one Unicode character; pi's regular expression (no `u`
//     flag) matches one UTF-16 unit, so pi needs `??` for an emoji.
//   - A home prefix is joined as written (`~/a/../b` stays as is); pi's
//     expansion helper was not available to compare.
//   - pi merges scopes (an agent's redefinition of a global pattern keeps
//     the global pattern's place); courier layers agent rules after all
//     global rules, so an agent override always outranks the global rules.
//   - pi skips invalid config entries silently; courier refuses the config.
//   - pi resolves several MCP candidates "first non-default match"; the
//     wire carries one value off path surfaces, and courier resolves
//     several values most-restrictive.
//   - Windows case folding of path surfaces is not implemented.
package rules
