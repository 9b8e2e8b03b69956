package rules

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/internal/fileperm"
)

// Config is courier's policy configuration: pi's `permission` object
// unchanged, per-agent overrides, and the broker's runtime knobs.
//
// To add a top-level key, add a field here, its default in newConfig, and a
// reader to topLevelKeys (parse.go); nothing else changes.
type Config struct {
	// Source names where the config came from in messages: the path given
	// to LoadFile or Parse, or "embedded:default.json".
	Source string
	// Permission is the top-level `permission` object.
	Permission Permission
	// Agents holds `agents.<name>.permission`, applied to asks whose
	// principal agent name is exactly <name>.
	Agents map[string]Permission
	// AgentUsers holds `agents.<name>.users`, resolved to uids when the
	// config is read: in isolation mode, the requesting uids the agent's
	// overrides are vouched for (see AgentTrust). An agent without the
	// key has no entry.
	AgentUsers map[string][]int
	// YoloMode turns every `ask` rule into an `allow` (denies stay).
	YoloMode bool
	// LegacyBashDisplayMatch is an operator opt-in (off by default) for
	// the approval fatigue of pi 20.x children, whose requests carry no
	// access facts and so always reach the chain and the terminal: such a
	// request on the bash surface is resolved against the rules by its
	// display value, the way a 20.x parent does. Never for path surfaces,
	// whose values depend on the child's working directory.
	LegacyBashDisplayMatch bool
	// ForwardingTimeout is `forwardingTimeoutMs`: how long a child waits
	// for an answer.
	ForwardingTimeout time.Duration
	// ReviewLogFieldMaxWidth is the width cap of every review-log string.
	ReviewLogFieldMaxWidth int
	// ReviewLogMaxBytes is `reviewLogMaxBytes`, courier's own: the size at
	// which the review log is rotated (renamed to <log>.1, replacing the
	// one before), so the log and its one rotation hold at most about
	// twice this. Default DefaultReviewLogMaxBytes.
	ReviewLogMaxBytes int64
	// PromptTimeout is `promptTimeoutMs`: how long the terminal waits for
	// a human; zero means no limit.
	PromptTimeout time.Duration
	// AuthorizerChain is `authorizerChain`: the authorizer plugins, in the
	// order they are consulted. Empty by default.
	AuthorizerChain []AuthorizerLink
	// Warnings lists what was read but not used as written: pi's settings
	// that courier does not read (an operator may point courier at a pi
	// config), an agent entry without a permission object, and
	// integer-like keys that JavaScript's key order moves to the front.
	// Unknown keys are not warnings but problems (ConfigError).
	Warnings []Diagnostic
}

// AuthorizerLink is one entry of `authorizerChain`: an authorizer plugin
// binary and how the broker runs it.
//
//	{"name": "denylist", "path": "/opt/courier/courier-authz-denylist",
//	 "sha256": "<64 hex digits>", "args": ["--deny", "rm -rf"],
//	 "timeoutMs": 2000, "onFailure": "deny", "mode": "enforce",
//	 "disclose": ["cwd"], "network": false}
//
// pi's authorizerChain lists names of in-process extensions; courier's
// links are processes, so a bare name is an error, not a link.
type AuthorizerLink struct {
	// Name labels the link in decidedBy and the review log; unique, made
	// of letters, digits, '.', '_' and '-'.
	Name string
	// Path is the plugin binary, an absolute path.
	Path string
	// SHA256 is the binary's SHA-256, lower-case hex. It is checked before
	// every start: a binary that differs is never run.
	SHA256 string
	// Args are passed to the plugin: this is where an operator puts the
	// plugin's own settings (or the path of a settings file).
	Args []string
	// Timeout is `timeoutMs`, the deadline of one call; default
	// DefaultLinkTimeout.
	Timeout time.Duration
	// OnFailure is the verdict when the link cannot judge (crash, hang,
	// garbage, disabled): LinkFailDeny by default, or LinkFailDefer.
	OnFailure LinkFailure
	// Mode is LinkEnforce by default, or LinkShadow: consulted and logged,
	// never enforced.
	Mode LinkMode
	// DiscloseCwd and DisclosePrincipal are `disclose: ["cwd",
	// "principal"]`: requester identity this link may see.
	DiscloseCwd       bool
	DisclosePrincipal bool
	// DiscloseConversation is `disclose: ["conversation"]`: the serving
	// session's user-intent text (broker serve --intent), when the broker
	// has some.
	DiscloseConversation bool
	// Network is `network: true`: the plugin keeps the network (a judge
	// that calls a model does). By default a link runs without one where
	// the machine can take it away (a network namespace, Landlock).
	Network bool
	// At is where the entry was written, file:line:column.
	At string
}

// LinkFailure is an authorizer link's failure verdict.
type LinkFailure string

// The failure verdicts. There is no allow: a link that fails never allows.
const (
	// LinkFailDeny denies the ask. It is the default: in a chain such as
	// [deny-list, allow-list], deferring past a broken deny-list would let
	// the allow-list approve what the deny-list exists to refuse.
	LinkFailDeny LinkFailure = "deny"
	// LinkFailDefer passes the ask on to the next link, then the terminal.
	LinkFailDefer LinkFailure = "defer"
)

// LinkMode is whether an authorizer link's verdicts count.
type LinkMode string

// The link modes.
const (
	LinkEnforce LinkMode = "enforce"
	LinkShadow  LinkMode = "shadow"
)

// DefaultLinkTimeout is an authorizer link's default timeoutMs, the
// default of pi's model judge.
const DefaultLinkTimeout = 5 * time.Second

// Permission is one `permission` object, already expanded: the bare `path`
// and `external_directory` keys are replaced by their `_read` and `_write`
// members, and rules are in evaluation order (later rules win).
type Permission struct {
	// Default is permission["*"], nil when the object has none (the
	// top-level default is then ask; an agent's is the top-level one).
	Default *Rule
	// Rules are the surface rules, in the order pi would evaluate them.
	Rules []Rule
}

// The defaults of the runtime knobs, pi's where pi has the knob.
const (
	DefaultForwardingTimeout      = 600_000 * time.Millisecond
	DefaultReviewLogFieldMaxWidth = 1000
	// DefaultReviewLogMaxBytes is courier's: pi's log is never rotated,
	// and one operator's log of a 100,000-request flood reached 107 MB.
	// 64 MiB holds some 80,000 decisions at pi's measured 765 bytes a
	// line, and the log and its rotation stay under 128 MiB.
	DefaultReviewLogMaxBytes = 64 << 20
	// MinReviewLogMaxBytes keeps a rotation holding more than a few lines.
	MinReviewLogMaxBytes = 1024
)

// MaxConfigSize bounds a config file. Real ones are a few kilobytes; the
// bound keeps a wrong --config path (a log, a binary) from being slurped.
const MaxConfigSize = 4 << 20

// DefaultSource is Config.Source for the embedded default configuration.
const DefaultSource = "embedded:default.json"

//go:embed default.json
var defaultJSON []byte

// DefaultConfigJSON returns the embedded default configuration, the one
// Load uses when no file is given. The package documentation explains its
// rules.
func DefaultConfigJSON() []byte { return append([]byte(nil), defaultJSON...) }

// ErrInvalidConfig is wrapped by every error about a config's content.
var ErrInvalidConfig = errors.New("invalid config")

// Diagnostic is one problem or warning at a place in a config file.
type Diagnostic struct {
	File string
	// Line and Column are 1-based; Column counts characters, not bytes.
	Line, Column int
	// Path names the value in the document, like `permission.bash["git *"]`;
	// empty for the document itself.
	Path    string
	Message string
}

// String renders file:line:column: path: message.
func (d Diagnostic) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: ", d.File, d.Line, d.Column)
	if d.Path != "" {
		b.WriteString(d.Path)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	return b.String()
}

// ConfigError lists what is wrong with a config, each problem with its
// place, and the warnings of the same document, so that one run shows an
// operator everything there is to fix. It wraps ErrInvalidConfig.
type ConfigError struct {
	Problems []Diagnostic
	// Warnings are what Config.Warnings would have held.
	Warnings []Diagnostic
}

// Error implements error: one problem per line, then one line per
// warning, starting "warning: ".
func (e *ConfigError) Error() string {
	lines := make([]string, 0, len(e.Problems)+len(e.Warnings))
	for _, p := range e.Problems {
		lines = append(lines, p.String())
	}
	for _, w := range e.Warnings {
		lines = append(lines, "warning: "+w.String())
	}
	return strings.Join(lines, "\n")
}

// Unwrap makes errors.Is(err, ErrInvalidConfig) hold.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// Load reads the config at path, or the embedded default when path is
// empty.
func Load(path string) (*Config, error) {
	if path == "" {
		return Parse(DefaultSource, defaultJSON)
	}
	return LoadFile(path)
}

// LoadFile reads and parses the config file at path. Messages name the
// file as path was given. A file that group or others may write, that a
// user other than this process's or root owns, or whose directory lets
// others replace it, is refused (an error wrapping fileperm.ErrRefused).
func LoadFile(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read config %s: not a regular file", path)
	}
	// Whoever can write the config decides every ask: a file group or
	// others may write, or that another user owns, is refused, and so is
	// one in a directory where they could put another in its place.
	if err := fileperm.CheckFile("config", path, st, fileperm.SelfOrRoot); err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if err := fileperm.CheckDir("config", path, fileperm.SelfOrRoot); err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	if len(data) > MaxConfigSize {
		return nil, fmt.Errorf("read config %s: larger than the %d bytes a config may have", path, MaxConfigSize)
	}
	return Parse(path, data)
}

func newConfig(source string) *Config {
	return &Config{
		Source:                 source,
		ForwardingTimeout:      DefaultForwardingTimeout,
		ReviewLogFieldMaxWidth: DefaultReviewLogFieldMaxWidth,
		ReviewLogMaxBytes:      DefaultReviewLogMaxBytes,
	}
}
