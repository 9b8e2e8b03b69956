package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// The config reader: Parse, the walk over the document, and the places
// and wording of what it reports. parse_permission.go reads the permission
// objects and keeps JavaScript's key order; parse_chain.go reads the
// authorizer chain.

// topLevelKeys reads each known top-level key, in the order messages list
// them. A reader is given the key's value and reports problems through p.
// A new key is one entry here and one field in Config.
var topLevelKeys = []struct {
	name string
	read func(p *parser, c *Config, path string, v strictjson.Value)
}{
	{"permission", func(p *parser, c *Config, path string, v strictjson.Value) {
		if !p.openObject(path, v, "expected an object mapping surfaces to actions") {
			return
		}
		c.Permission = p.permissionObject(path, v, OriginGlobal)
	}},
	{"agents", func(p *parser, c *Config, path string, v strictjson.Value) {
		if !p.openObject(path, v, `expected an object mapping agent names to {"permission": {...}}`) {
			return
		}
		c.AgentUsers = make(map[string][]int)
		c.Agents = p.agents(path, v, c.AgentUsers)
	}},
	{"yoloMode", func(p *parser, c *Config, path string, v strictjson.Value) {
		if b, ok := p.boolean(path, v); ok {
			c.YoloMode = b
		}
	}},
	{"legacyBashDisplayMatch", func(p *parser, c *Config, path string, v strictjson.Value) {
		if b, ok := p.boolean(path, v); ok {
			c.LegacyBashDisplayMatch = b
		}
	}},
	{"forwardingTimeoutMs", func(p *parser, c *Config, path string, v strictjson.Value) {
		if ms, ok := p.integer(path, v, 1, "milliseconds"); ok {
			c.ForwardingTimeout = time.Duration(ms) * time.Millisecond
		}
	}},
	{"reviewLogFieldMaxWidth", func(p *parser, c *Config, path string, v strictjson.Value) {
		if n, ok := p.integer(path, v, 1, "characters"); ok {
			c.ReviewLogFieldMaxWidth = int(n)
		}
	}},
	{"reviewLogMaxBytes", func(p *parser, c *Config, path string, v strictjson.Value) {
		if n, ok := p.integer(path, v, MinReviewLogMaxBytes, "bytes"); ok {
			c.ReviewLogMaxBytes = n
		}
	}},
	{"promptTimeoutMs", func(p *parser, c *Config, path string, v strictjson.Value) {
		if ms, ok := p.integer(path, v, 0, "milliseconds, 0 for no limit"); ok {
			c.PromptTimeout = time.Duration(ms) * time.Millisecond
		}
	}},
	{"authorizerChain", func(p *parser, c *Config, path string, v strictjson.Value) {
		c.AuthorizerChain = p.authorizerChain(path, v)
	}},
}

// maxInteger bounds the integer knobs: JavaScript timers hold at most
// 2^31-1 ms (about 24.8 days), so a larger timeout would mean something
// else under pi.
const maxInteger = math.MaxInt32

// maxProblems stops a config with a systematic mistake from printing
// screens of errors.
const maxProblems = 20

// Parse reads a config document. name is used in messages and as
// Config.Source. Every problem is reported with its line and column; a
// config with any problem is refused whole, with a *ConfigError.
func Parse(name string, data []byte) (*Config, error) {
	p := &parser{file: name, data: data, lineStarts: lineStarts(data)}
	if len(data) > MaxConfigSize {
		p.fail(0, "", fmt.Sprintf("larger than the %d bytes a config may have", MaxConfigSize))
		return nil, p.err()
	}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		p.fail(0, "", "starts with a UTF-8 byte order mark, which JSON (and pi's JSON.parse) refuses; save the file without it")
		return nil, p.err()
	}
	if len(bytes.TrimSpace(data)) == 0 {
		p.fail(len(data), "", `empty, expected a JSON object such as {"permission": {...}}`)
		return nil, p.err()
	}
	// Check the syntax first, with encoding/json's wording and the offset
	// of the byte at fault. The walk below trusts that the document is
	// well formed; it does not need strictjson.Check's other refusals,
	// since a repeated key is reported here with both places.
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		off := len(data)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = int(se.Offset)
			if off > 0 && off <= len(data) && !strings.HasPrefix(se.Error(), "unexpected end") {
				off-- // Offset counts the offending byte
			}
		}
		p.fail(off, "", "invalid JSON: "+err.Error())
		return nil, p.err()
	}

	c := newConfig(name)
	root := strictjson.Root(data)
	if root.Kind() != strictjson.KindObject {
		p.fail(root.Offset(), "", "expected a JSON object, got "+describe(root))
		return nil, p.err()
	}
	seen := make(map[string]int) // top-level key → the offset of its value
	p.object("", root, func(key string, keyAt int, v strictjson.Value) {
		path := memberPath("", key)
		for _, k := range topLevelKeys {
			if k.name == key {
				seen[key] = v.Offset()
				k.read(p, c, path, v)
				return
			}
		}
		switch {
		case key == "$schema":
			// An editor's hint, in pi's configs too: not a setting.
		case piOnlyKeys[key]:
			p.warn(keyAt, path, "pi-permission-system's setting, which courier does not read: ignored")
		default:
			p.fail(keyAt, path, unknownTopLevelKey(key))
		}
		p.skip(path, v)
	})
	if at, yolo := seen["yoloMode"]; yolo && c.YoloMode {
		if _, ok := seen["permission"]; !ok {
			// Under yolo every ask becomes an allow, and with no
			// permission object every ask is the default's: a config
			// whose permission object is missing (or misspelt, the
			// attack of issue 14) would allow everything.
			p.fail(at, "yoloMode", `true turns every ask into an allow, and this config has no "permission" object, so every ask would be allowed: add the permission object (its denies stand under yolo) or set yoloMode to false`)
		}
	}
	if _, ok := seen["permission"]; !ok && !c.YoloMode {
		// pi reads such a file as "no rules", but it is rarely meant:
		// the built-in rules are not merged into a config file, so this
		// one would drop every deny, and a misspelt "permission" (with
		// its unknown key reported beside) looks just like it. An empty
		// object says "no rules" on purpose (issue 16).
		p.fail(root.Offset(), "", `no "permission" object, so no rules at all, not even the built-in denies (rules/default.json applies only without --config): copy its permission object to start from, or write "permission": {} to serve with no rules on purpose`)
	}
	if len(p.problems) > 0 {
		return nil, p.err()
	}
	c.Warnings = p.warnings
	return c, nil
}

// piOnlyKeys are pi-permission-system's top-level settings that courier
// does not read: a pi user's config still loads, with a notice for each.
// The list is pi's config schema (unifiedConfigSchema in
// packages/pi-permission-system/src/config/config-schema.ts) and the keys
// shared/reference/pi-forwarding.md records from other revisions
// (logging, allowAuthorizerOnExternalDirectory). Ignoring any of them only
// ever makes courier stricter than pi: authorizerTrust would lift the
// delegation envelope, the prompt and log toggles change no decision.
var piOnlyKeys = map[string]bool{
	"debugLog":                           true,
	"permissionReviewLog":                true,
	"doublePressToConfirm":               true,
	"permissionDialogKeys":               true,
	"promptMaxRows":                      true,
	"promptFieldMaxWidth":                true,
	"toolInputPreviewMaxLength":          true,
	"toolTextSummaryMaxLength":           true,
	"piInfrastructureReadPaths":          true,
	"authorizerTrust":                    true,
	"shellTools":                         true,
	"logging":                            true,
	"allowAuthorizerOnExternalDirectory": true,
}

// unknownTopLevelKey is the message of a top-level key that neither
// courier nor pi defines: an error, since a misspelt key silently drops
// what the operator meant (issue 14: "permisson" under yoloMode allowed
// every ask).
func unknownTopLevelKey(key string) string {
	names := make([]string, len(topLevelKeys))
	for i, k := range topLevelKeys {
		names[i] = k.name
	}
	if s := didYouMean(key, names); s != "" {
		return "unknown key: " + s
	}
	return "unknown key: courier reads " + strings.Join(names, ", ") + " (and accepts pi-permission-system's other settings, unread)"
}

// parser walks a well-formed document with strictjson's walker, which
// gives the byte offset where each key and value starts, so problems can
// name a line and column. Problems are reported in document order.
type parser struct {
	file       string
	data       []byte
	lineStarts []int
	problems   []Diagnostic
	warnings   []Diagnostic
}

func (p *parser) err() error {
	return &ConfigError{Problems: p.problems, Warnings: p.warnings}
}

func (p *parser) diag(off int, path, msg string) Diagnostic {
	line, col := p.lineCol(off)
	return Diagnostic{File: p.file, Line: line, Column: col, Path: path, Message: msg}
}

func (p *parser) fail(off int, path, msg string) {
	switch {
	case len(p.problems) < maxProblems:
		p.problems = append(p.problems, p.diag(off, path, msg))
	case len(p.problems) == maxProblems:
		p.problems = append(p.problems, p.diag(off, "", "too many problems, stopping here"))
	}
}

func (p *parser) warn(off int, path, msg string) {
	p.warnings = append(p.warnings, p.diag(off, path, msg))
}

// at renders an offset as file:line:column, the place a rule was written.
func (p *parser) at(off int) string {
	line, col := p.lineCol(off)
	return fmt.Sprintf("%s:%d:%d", p.file, line, col)
}

func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineCol converts a byte offset to a 1-based line and a 1-based column
// counted in characters.
func (p *parser) lineCol(off int) (line, col int) {
	off = min(max(off, 0), len(p.data))
	i := sort.Search(len(p.lineStarts), func(i int) bool { return p.lineStarts[i] > off }) - 1
	return i + 1, utf8.RuneCount(p.data[p.lineStarts[i]:off]) + 1
}

// object reads the members of the object v, calling fn with each key, the
// offset of its opening quote, and its value. Keys that repeat in any
// letter case are refused, as the mailbox readers refuse them
// (docs/decisions/0001-strict-tolerant-wire-readers.md); a repeat's value
// is not read, only searched for repeats of its own.
func (p *parser) object(path string, v strictjson.Value, fn func(key string, keyAt int, v strictjson.Value)) {
	type first struct {
		key string
		at  int
	}
	seen := make(map[string]first)
	members := v.Members()
	for members.Next() {
		key, keyAt := keyOf(members.Key())
		folded := strictjson.FoldKey(key)
		if f, dup := seen[folded]; dup {
			line, col := p.lineCol(f.at)
			p.fail(keyAt, path, fmt.Sprintf("duplicate key %q: keys may not repeat in any letter case (first %q at %d:%d)", key, f.key, line, col))
			p.skip(path, members.Value())
			continue
		}
		seen[folded] = first{key, keyAt}
		fn(key, keyAt, members.Value())
	}
}

// skip passes over a value nothing reads, or a container where a scalar
// was expected (before the caller says so). Objects inside it are still
// searched for repeated keys: a repeat is an error wherever it is. It
// keeps its own stack rather than recurse, so nesting depth costs nothing.
func (p *parser) skip(path string, v strictjson.Value) {
	// A frame is an open object (members, and the keys seen so far, each
	// at its latest place) or an open array (items).
	type frame struct {
		members strictjson.Members
		items   strictjson.Items
		seen    map[string]int
	}
	open := func(stack []frame, v strictjson.Value) []frame {
		switch v.Kind() {
		case strictjson.KindObject:
			return append(stack, frame{members: v.Members(), seen: make(map[string]int)})
		case strictjson.KindArray:
			return append(stack, frame{items: v.Items()})
		}
		return stack
	}
	stack := open(nil, v)
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		var next strictjson.Value
		if top.seen != nil {
			if !top.members.Next() {
				stack = stack[:len(stack)-1]
				continue
			}
			key, at := keyOf(top.members.Key())
			folded := strictjson.FoldKey(key)
			if first, dup := top.seen[folded]; dup {
				line, col := p.lineCol(first)
				p.fail(at, path, fmt.Sprintf("duplicate key %q: keys may not repeat in any letter case (first at %d:%d)", key, line, col))
			}
			top.seen[folded] = at
			next = top.members.Value()
		} else {
			if !top.items.Next() {
				stack = stack[:len(stack)-1]
				continue
			}
			next = top.items.Value()
		}
		stack = open(stack, next)
	}
}

// keyOf returns a member's decoded key and the offset of its opening quote.
func keyOf(key strictjson.Value) (string, int) {
	return string(key.Text()), key.Offset()
}

// stringOf returns the text of v if it is a string.
func stringOf(v strictjson.Value) (string, bool) {
	if v.Kind() != strictjson.KindString {
		return "", false
	}
	return string(v.Text()), true
}

// openObject reports whether path's value v is an object. Anything else
// is reported as "<expected>, got <what it is>" and skipped, so the caller
// can return and parsing goes on.
func (p *parser) openObject(path string, v strictjson.Value, expected string) bool {
	if v.Kind() != strictjson.KindObject {
		p.fail(v.Offset(), path, expected+", got "+describe(v))
		p.skip(path, v)
		return false
	}
	return true
}

// boolean reads a value that must be true or false.
func (p *parser) boolean(path string, v strictjson.Value) (bool, bool) {
	p.skip(path, v)
	switch v.Kind() {
	case strictjson.KindTrue:
		return true, true
	case strictjson.KindFalse:
		return false, true
	}
	p.fail(v.Offset(), path, "expected true or false, got "+describe(v))
	return false, false
}

// integer reads an integer knob in [lo, maxInteger]. JSON has one number
// type, so 1e3 and 1000.0 are the integer 1000, as in JavaScript.
func (p *parser) integer(path string, v strictjson.Value, lo int64, unit string) (int64, bool) {
	p.skip(path, v)
	expect := fmt.Sprintf("expected an integer ≥ %d (%s), got ", lo, unit)
	if v.Kind() != strictjson.KindNumber {
		p.fail(v.Offset(), path, expect+describe(v))
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v.Raw()), 64)
	if err != nil || f != math.Trunc(f) || f < float64(lo) {
		p.fail(v.Offset(), path, expect+describe(v))
		return 0, false
	}
	if f > maxInteger {
		p.fail(v.Offset(), path, fmt.Sprintf("expected at most %d, got %s", maxInteger, describe(v)))
		return 0, false
	}
	return int64(f), true
}

// describe renders a value for "got ..." in messages: a string quoted
// (cut at 60 characters), a number or literal as written, a container by
// its kind.
func describe(v strictjson.Value) string {
	switch v.Kind() {
	case strictjson.KindString:
		s, _ := stringOf(v)
		return describeString(s)
	case strictjson.KindObject:
		return "an object"
	case strictjson.KindArray:
		return "an array"
	}
	return string(v.Raw())
}

// describeString renders a string for "got ..." in messages.
func describeString(s string) string {
	if utf8.RuneCountInString(s) > 60 {
		s = string([]rune(s)[:60]) + "…"
	}
	return strconv.Quote(s)
}

// memberPath appends key to a document path: `.key` when key is an
// identifier, `["key"]` otherwise.
func memberPath(path, key string) string {
	if isIdentifier(key) {
		if path == "" {
			return key
		}
		return path + "." + key
	}
	return path + "[" + strconv.Quote(key) + "]"
}

func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
		case i > 0 && '0' <= r && r <= '9':
		default:
			return false
		}
	}
	return true
}
