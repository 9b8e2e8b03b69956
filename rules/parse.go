package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// topLevelKeys reads each known top-level key, in the order messages list
// them. A reader is called with the decoder before the key's value and
// must consume that value whole, reporting problems through p. A new key
// is one entry here and one field in Config.
var topLevelKeys = []struct {
	name string
	read func(p *parser, c *Config, path string)
}{
	{"permission", func(p *parser, c *Config, path string) {
		if !p.openObject(path, "expected an object mapping surfaces to actions") {
			return
		}
		c.Permission = p.permissionObject(path, OriginGlobal)
	}},
	{"agents", func(p *parser, c *Config, path string) {
		if !p.openObject(path, `expected an object mapping agent names to {"permission": {...}}`) {
			return
		}
		c.Agents = p.agents(path)
	}},
	{"yoloMode", func(p *parser, c *Config, path string) {
		if b, ok := p.boolean(path); ok {
			c.YoloMode = b
		}
	}},
	{"legacyBashDisplayMatch", func(p *parser, c *Config, path string) {
		if b, ok := p.boolean(path); ok {
			c.LegacyBashDisplayMatch = b
		}
	}},
	{"forwardingTimeoutMs", func(p *parser, c *Config, path string) {
		if ms, ok := p.integer(path, 1, "milliseconds"); ok {
			c.ForwardingTimeout = time.Duration(ms) * time.Millisecond
		}
	}},
	{"reviewLogFieldMaxWidth", func(p *parser, c *Config, path string) {
		if n, ok := p.integer(path, 1, "characters"); ok {
			c.ReviewLogFieldMaxWidth = int(n)
		}
	}},
	{"promptTimeoutMs", func(p *parser, c *Config, path string) {
		if ms, ok := p.integer(path, 0, "milliseconds, 0 for no limit"); ok {
			c.PromptTimeout = time.Duration(ms) * time.Millisecond
		}
	}},
	{"authorizerChain", func(p *parser, c *Config, path string) {
		c.AuthorizerChain = p.authorizerChain(path)
	}},
}

// openObject reads the '{' that must open path's value. Anything else is
// reported as "<expected>, got <what it is>" and skipped whole, so the
// caller can return and parsing goes on.
func (p *parser) openObject(path, expected string) bool {
	tok, at, ok := p.token()
	if !ok {
		return false
	}
	if tok != json.Delim('{') {
		p.fail(at, path, expected+", got "+describe(tok))
		p.skipFrom(tok, path)
		return false
	}
	return true
}

// boolean reads a value that must be true or false.
func (p *parser) boolean(path string) (bool, bool) {
	tok, at := p.scalar(path)
	b, ok := tok.(bool)
	if !ok {
		p.fail(at, path, "expected true or false, got "+describe(tok))
	}
	return b, ok
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
	// Check the syntax first: encoding/json reports exact offsets for a
	// whole-document check, while json.Decoder's token offsets are relative
	// to the value it was reading.
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
	p.dec = json.NewDecoder(bytes.NewReader(data))
	p.dec.UseNumber()
	tok, at, ok := p.token()
	if !ok {
		return nil, p.err()
	}
	if tok != json.Delim('{') {
		p.fail(at, "", "expected a JSON object, got "+describe(tok))
		return nil, p.err()
	}
	p.object("", func(key string, keyAt int) {
		path := memberPath("", key)
		var names []string
		for _, k := range topLevelKeys {
			if k.name == key {
				k.read(p, c, path)
				return
			}
			names = append(names, k.name)
		}
		msg := "unknown key, ignored (courier reads " + strings.Join(names, ", ") + ")"
		for _, name := range names {
			if strings.EqualFold(name, key) {
				msg = fmt.Sprintf("unknown key, ignored: keys are case-sensitive, did you mean %q?", name)
			}
		}
		p.warn(keyAt, path, msg)
		p.skipValue(path)
	})
	if len(p.problems) > 0 {
		return nil, p.err()
	}
	c.Warnings = p.warnings
	return c, nil
}

// parser walks a syntactically valid document with json.Decoder, keeping
// the byte offset where each token starts so problems can name a line and
// column.
type parser struct {
	file       string
	data       []byte
	dec        *json.Decoder
	lineStarts []int
	problems   []Diagnostic
	warnings   []Diagnostic
	// halted is set when the decoder failed; nothing more can be read.
	halted bool
}

func (p *parser) err() error {
	return &ConfigError{Problems: p.problems}
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

// token reads the next token and the offset where it starts. The decoder
// reports the end of the previous token; the separators after it belong
// to no token.
func (p *parser) token() (json.Token, int, bool) {
	if p.halted {
		return nil, len(p.data), false
	}
	at := int(p.dec.InputOffset())
	for at < len(p.data) {
		switch p.data[at] {
		case ' ', '\t', '\r', '\n', ':', ',':
			at++
			continue
		}
		break
	}
	tok, err := p.dec.Token()
	if err != nil {
		p.fail(at, "", "invalid JSON: "+err.Error())
		p.halted = true
		return nil, at, false
	}
	return tok, at, true
}

// object reads the members of an object whose '{' was just read, calling
// fn for each key with the decoder before the key's value; fn must read
// that value whole. Keys that repeat in any letter case are refused, as
// the mailbox readers refuse them (docs/decisions/0001).
func (p *parser) object(path string, fn func(key string, keyAt int)) {
	type first struct {
		key string
		at  int
	}
	seen := make(map[string]first)
	for !p.halted && p.dec.More() {
		tok, keyAt, ok := p.token()
		if !ok {
			return
		}
		key, _ := tok.(string)
		folded := strictjson.FoldKey(key)
		if f, dup := seen[folded]; dup {
			line, col := p.lineCol(f.at)
			p.fail(keyAt, path, fmt.Sprintf("duplicate key %q: keys may not repeat in any letter case (first %q at %d:%d)", key, f.key, line, col))
			p.skipValue(path)
			continue
		}
		seen[folded] = first{key, keyAt}
		fn(key, keyAt)
	}
	p.token() // the closing '}'
}

// scalar reads a value where a scalar is expected. A container is skipped
// whole and its opening delimiter returned, for describe.
func (p *parser) scalar(path string) (json.Token, int) {
	tok, at, _ := p.token()
	p.skipFrom(tok, path)
	return tok, at
}

// skipValue reads and discards one value.
func (p *parser) skipValue(path string) {
	tok, _, ok := p.token()
	if ok {
		p.skipFrom(tok, path)
	}
}

// skipFrom discards the rest of a value whose first token is tok. Objects
// inside are still checked for duplicate keys: a duplicate is an error
// wherever it is. It does not recurse, so nesting depth costs nothing.
func (p *parser) skipFrom(tok json.Token, path string) {
	d, ok := tok.(json.Delim)
	if !ok || d == '}' || d == ']' {
		return
	}
	type frame struct {
		obj, wantKey bool
		seen         map[string]int
	}
	push := func(stack []frame, d json.Delim) []frame {
		f := frame{obj: d == '{', wantKey: d == '{'}
		if f.obj {
			f.seen = make(map[string]int)
		}
		return append(stack, f)
	}
	stack := push(nil, d)
	for len(stack) > 0 {
		tok, at, ok := p.token()
		if !ok {
			return
		}
		top := &stack[len(stack)-1]
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if n := len(stack); n > 0 {
				stack[n-1].wantKey = stack[n-1].obj
			}
			continue
		}
		if top.obj && top.wantKey {
			key, _ := tok.(string)
			folded := strictjson.FoldKey(key)
			if first, dup := top.seen[folded]; dup {
				line, col := p.lineCol(first)
				p.fail(at, path, fmt.Sprintf("duplicate key %q: keys may not repeat in any letter case (first at %d:%d)", key, line, col))
			}
			top.seen[folded] = at
			top.wantKey = false
			continue
		}
		if d, ok := tok.(json.Delim); ok {
			stack = push(stack, d)
			continue
		}
		if top.obj {
			top.wantKey = true
		}
	}
}

// integer reads an integer knob in [lo, maxInteger]. JSON has one number
// type, so 1e3 and 1000.0 are the integer 1000, as in JavaScript.
func (p *parser) integer(path string, lo int64, unit string) (int64, bool) {
	tok, at := p.scalar(path)
	expect := fmt.Sprintf("expected an integer ≥ %d (%s), got ", lo, unit)
	num, ok := tok.(json.Number)
	if !ok {
		p.fail(at, path, expect+describe(tok))
		return 0, false
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil || f != math.Trunc(f) || f < float64(lo) {
		p.fail(at, path, expect+describe(tok))
		return 0, false
	}
	if f > maxInteger {
		p.fail(at, path, fmt.Sprintf("expected at most %d, got %s", maxInteger, describe(tok)))
		return 0, false
	}
	return int64(f), true
}

// patternEntry is one pattern → action of a permission object, before
// expansion; wide marks a surface-wide action written as a plain string.
type patternEntry struct {
	pattern string
	action  Action
	reason  string
	wide    bool
	at      int
}

// surfaceEntry is one surface key of a permission object.
type surfaceEntry struct {
	surface  string
	at       int
	patterns []patternEntry
}

func (e *surfaceEntry) key() string { return e.surface }
func (e *patternEntry) key() string { return e.pattern }
func (e *surfaceEntry) offset() int { return e.at }
func (e *patternEntry) offset() int { return e.at }

// permissionObject reads a permission object whose '{' was just read and
// returns its expanded rules with the given origin.
func (p *parser) permissionObject(path string, origin Origin) Permission {
	var perm Permission
	var surfaces []surfaceEntry
	p.object(path, func(key string, keyAt int) {
		kp := memberPath(path, key)
		if key == "*" {
			tok, at := p.scalar(kp)
			a, ok := actionOf(tok)
			if !ok {
				p.fail(at, kp, `expected "allow", "ask" or "deny" (the action when no rule matches), got `+describe(tok))
				return
			}
			perm.Default = &Rule{Surface: "*", Pattern: "*", SurfaceWide: true, Action: a, Origin: OriginDefault, At: p.at(at)}
			return
		}
		if key == "" {
			p.fail(keyAt, kp, "empty surface name")
			p.skipValue(kp)
			return
		}
		se := surfaceEntry{surface: key, at: keyAt}
		tok, at, ok := p.token()
		if !ok {
			return
		}
		if a, ok := actionOf(tok); ok {
			se.patterns = []patternEntry{{pattern: "*", action: a, wide: true, at: at}}
		} else if tok == json.Delim('{') {
			se.patterns = p.patternMap(kp)
		} else {
			p.fail(at, kp, `expected "allow", "ask", "deny" or an object mapping patterns to actions, got `+describe(tok))
			p.skipFrom(tok, kp)
			return
		}
		surfaces = append(surfaces, se)
	})
	surfaces = jsOrder(p, path, surfaces, func(e *surfaceEntry) string { return memberPath(path, e.surface) })
	for _, se := range expandSugar(surfaces) {
		for _, pe := range se.patterns {
			perm.Rules = append(perm.Rules, Rule{
				Surface: se.surface, Pattern: pe.pattern, SurfaceWide: pe.wide,
				Action: pe.action, Reason: pe.reason, Origin: origin, At: p.at(pe.at),
			})
		}
	}
	return perm
}

// patternMap reads a pattern → action object whose '{' was just read.
func (p *parser) patternMap(path string) []patternEntry {
	var entries []patternEntry
	p.object(path, func(key string, keyAt int) {
		kp := path + "[" + strconv.Quote(key) + "]"
		tok, at, ok := p.token()
		if !ok {
			return
		}
		if a, ok := actionOf(tok); ok {
			entries = append(entries, patternEntry{pattern: key, action: a, at: keyAt})
			return
		}
		if tok == json.Delim('{') {
			if reason, ok := p.denyObject(kp, at); ok {
				entries = append(entries, patternEntry{pattern: key, action: Deny, reason: reason, at: keyAt})
			}
			return
		}
		p.fail(at, kp, `expected "allow", "ask", "deny" or {"action":"deny","reason":...}, got `+describe(tok))
		p.skipFrom(tok, kp)
	})
	return jsOrder(p, path, entries, func(e *patternEntry) string { return path + "[" + strconv.Quote(e.pattern) + "]" })
}

// denyObject reads {"action":"deny","reason":"..."} after its '{'. pi
// accepts the object form for deny only; reason is optional there too.
func (p *parser) denyObject(path string, openAt int) (reason string, ok bool) {
	action, actionAt := "", -1
	valid := true
	p.object(path, func(key string, keyAt int) {
		switch key {
		case "action":
			tok, at := p.scalar(path + ".action")
			s, isStr := tok.(string)
			if !isStr {
				p.fail(at, path+".action", `expected "deny", got `+describe(tok))
				valid = false
				return
			}
			action, actionAt = s, at
		case "reason":
			tok, at := p.scalar(path + ".reason")
			s, isStr := tok.(string)
			if !isStr {
				p.fail(at, path+".reason", "expected a string, got "+describe(tok))
				valid = false
				return
			}
			reason = s
		default:
			p.fail(keyAt, path, fmt.Sprintf(`unknown key %q, expected {"action":"deny","reason":...}`, key))
			p.skipValue(path)
			valid = false
		}
	})
	switch {
	case !valid:
		return "", false
	case actionAt < 0:
		p.fail(openAt, path, `missing "action", expected {"action":"deny","reason":...}`)
		return "", false
	case action != string(Deny):
		p.fail(actionAt, path+".action", fmt.Sprintf(`expected "deny": a reason is valid for deny only, so write other actions as a plain string, got %q`, action))
		return "", false
	}
	return reason, true
}

// agents reads agents.<name>.permission entries after the '{'.
func (p *parser) agents(path string) map[string]Permission {
	out := make(map[string]Permission)
	p.object(path, func(name string, nameAt int) {
		ap := memberPath(path, name)
		if name == "" {
			p.fail(nameAt, ap, "empty agent name")
			p.skipValue(ap)
			return
		}
		tok, at, ok := p.token()
		if !ok {
			return
		}
		if tok != json.Delim('{') {
			p.fail(at, ap, `expected an object {"permission": {...}}, got `+describe(tok))
			p.skipFrom(tok, ap)
			return
		}
		var perm Permission
		found := false
		p.object(ap, func(key string, keyAt int) {
			kp := memberPath(ap, key)
			if key != "permission" {
				p.warn(keyAt, kp, "unknown key, ignored (an agent entry reads permission)")
				p.skipValue(kp)
				return
			}
			if !p.openObject(kp, "expected an object mapping surfaces to actions") {
				return
			}
			perm = p.permissionObject(kp, OriginAgent)
			found = true
		})
		if !found {
			p.warn(at, ap, "no permission object, so this agent has no overrides")
		}
		out[name] = perm
	})
	return out
}

// actionOf reads an action string token.
func actionOf(tok json.Token) (Action, bool) {
	s, ok := tok.(string)
	if !ok {
		return "", false
	}
	return parseAction(s)
}

// describe renders a token for "got ..." in messages.
func describe(tok json.Token) string {
	switch v := tok.(type) {
	case string:
		if utf8.RuneCountInString(v) > 60 {
			v = string([]rune(v)[:60]) + "…"
		}
		return strconv.Quote(v)
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		if v == '[' {
			return "an array"
		}
	}
	return fmt.Sprint(tok)
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

// isArrayIndex reports whether JavaScript treats key as an array index:
// the canonical decimal spelling of an integer below 2^32-1. Objects list
// such keys first, in numeric order, before all other keys in insertion
// order.
func isArrayIndex(key string) bool {
	if key == "" || len(key) > 10 || (key[0] == '0' && key != "0") {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return false
		}
	}
	n, err := strconv.ParseUint(key, 10, 64)
	return err == nil && n <= math.MaxUint32-1
}

func arrayIndex(key string) uint64 {
	n, _ := strconv.ParseUint(key, 10, 64)
	return n
}

// keyed is an entry of an ordered JSON object.
type keyed interface {
	key() string
	offset() int
}

// jsLess orders keys the way JavaScript lists an object's own keys.
func jsLess(a, b string) bool {
	ai, bi := isArrayIndex(a), isArrayIndex(b)
	switch {
	case ai && bi:
		return arrayIndex(a) < arrayIndex(b)
	case ai:
		return true
	}
	return false
}

// jsOrder puts entries in JavaScript's key order (pi reads the config
// with JSON.parse, so this is the order its last-match-wins scan sees) and
// warns about every integer-like key the reordering moved.
func jsOrder[T any, PT interface {
	*T
	keyed
}](p *parser, path string, entries []T, where func(*T) string) []T {
	ordered := slices.Clone(entries)
	sort.SliceStable(ordered, func(i, j int) bool {
		return jsLess(PT(&ordered[i]).key(), PT(&ordered[j]).key())
	})
	for i := range ordered {
		if PT(&ordered[i]).key() == PT(&entries[i]).key() {
			continue
		}
		for j := range ordered {
			k := PT(&ordered[j]).key()
			if isArrayIndex(k) {
				p.warn(PT(&ordered[j]).offset(), where(&ordered[j]),
					"integer-like key: JavaScript, and so pi, lists such keys first in numeric order; courier evaluates it in that place too, before keys written above it")
			}
		}
		break
	}
	return ordered
}

// jsSet assigns e into an ordered object the way a JavaScript property
// assignment does: an existing key keeps its place, a new one goes last,
// or among the leading array indices when it is one.
func jsSet[T any, PT interface {
	*T
	keyed
}](list []T, e T) []T {
	k := PT(&e).key()
	for i := range list {
		if PT(&list[i]).key() == k {
			list[i] = e
			return list
		}
	}
	if !isArrayIndex(k) {
		return append(list, e)
	}
	i := 0
	for i < len(list) && jsLess(PT(&list[i]).key(), k) {
		i++
	}
	return slices.Insert(list, i, e)
}

// familyMembers returns the directional members of a bare family surface,
// read first (ADR 0013's order), or nil for any other surface.
func familyMembers(surface string) []string {
	switch surface {
	case "path":
		return []string{"path_read", "path_write"}
	case "external_directory":
		return []string{"external_directory_read", "external_directory_write"}
	}
	return nil
}

// expandSugar replaces the bare path and external_directory keys with
// their _read and _write members, as pi's expandDirectionalSugar does: a
// member gets the sugar's entries first and the explicit member's entries
// after them, whatever the keys' order in the file; a pattern the explicit
// member redefines appears once, at the explicit entry's place.
func expandSugar(surfaces []surfaceEntry) []surfaceEntry {
	var out []surfaceEntry
	find := func(list []surfaceEntry, name string) int {
		return slices.IndexFunc(list, func(e surfaceEntry) bool { return e.surface == name })
	}
	for _, s := range surfaces {
		members := familyMembers(s.surface)
		if members == nil {
			if find(out, s.surface) < 0 {
				out = jsSet(out, s)
			}
			continue
		}
		for _, m := range members {
			merged := surfaceEntry{surface: m, at: s.at}
			i := find(surfaces, m)
			if i < 0 {
				merged.patterns = slices.Clone(s.patterns)
			} else {
				explicit := surfaces[i].patterns
				for _, e := range s.patterns {
					if !slices.ContainsFunc(explicit, func(x patternEntry) bool { return x.pattern == e.pattern }) {
						merged.patterns = jsSet(merged.patterns, e)
					}
				}
				for _, e := range explicit {
					merged.patterns = jsSet(merged.patterns, e)
				}
			}
			out = jsSet(out, merged)
		}
	}
	return out
}

// linkNameRE is what an authorizer link's name may be: it is written into
// decidedBy and review logs, so it is kept to a plain token.
var linkNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// sha256RE is a SHA-256 digest in hex, either case.
var sha256RE = regexp.MustCompile(`^[0-9A-Fa-f]{64}$`)

// linkKeys lists the keys of an authorizerChain entry, for messages.
const linkKeys = "name, path, sha256, args, timeoutMs, onFailure, mode, disclose"

// authorizerChain reads the authorizerChain array: its entries in order.
func (p *parser) authorizerChain(path string) []AuthorizerLink {
	tok, at, ok := p.token()
	if !ok {
		return nil
	}
	if tok != json.Delim('[') {
		p.fail(at, path, "expected an array of authorizer links {name, path, sha256, ...}, got "+describe(tok))
		p.skipFrom(tok, path)
		return nil
	}
	var links []AuthorizerLink
	names := make(map[string]int)
	for i := 0; !p.halted && p.dec.More(); i++ {
		ep := path + "[" + strconv.Itoa(i) + "]"
		tok, at, ok := p.token()
		if !ok {
			return nil
		}
		if tok != json.Delim('{') {
			msg := "expected an authorizer link {name, path, sha256, ...}, got " + describe(tok)
			if _, isName := tok.(string); isName {
				msg += ": courier runs authorizer links as plugin binaries, so pi's registered link names do not apply; write {\"name\": ..., \"path\": ..., \"sha256\": ...}"
			}
			p.fail(at, ep, msg)
			p.skipFrom(tok, ep)
			continue
		}
		link, ok := p.authorizerLink(ep, at)
		if !ok {
			continue
		}
		if first, dup := names[link.Name]; dup {
			line, col := p.lineCol(first)
			p.fail(at, ep+".name", fmt.Sprintf("duplicate link name %q (first at %d:%d): names must be unique", link.Name, line, col))
			continue
		}
		names[link.Name] = at
		links = append(links, link)
	}
	p.token() // the closing ']'
	return links
}

// authorizerLink reads one link object after its '{'. Unknown keys are
// errors, not warnings: a misspelt "mode" would otherwise enforce a link
// meant to run in shadow.
func (p *parser) authorizerLink(path string, openAt int) (AuthorizerLink, bool) {
	link := AuthorizerLink{Timeout: DefaultLinkTimeout, OnFailure: LinkFailDeny, Mode: LinkEnforce, At: p.at(openAt)}
	valid := true
	fail := func(at int, kp, msg string) {
		p.fail(at, kp, msg)
		valid = false
	}
	str := func(kp string) (string, int, bool) {
		tok, at := p.scalar(kp)
		s, ok := tok.(string)
		if !ok {
			fail(at, kp, "expected a string, got "+describe(tok))
		}
		return s, at, ok
	}
	p.object(path, func(key string, keyAt int) {
		kp := memberPath(path, key)
		switch key {
		case "name":
			if s, at, ok := str(kp); ok {
				if !linkNameRE.MatchString(s) {
					fail(at, kp, "expected a name of letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit), got "+describe(s))
					return
				}
				link.Name = s
			}
		case "path":
			if s, at, ok := str(kp); ok {
				if !filepath.IsAbs(s) {
					fail(at, kp, "expected an absolute path to the plugin binary, got "+describe(s))
					return
				}
				link.Path = filepath.Clean(s)
			}
		case "sha256":
			if s, at, ok := str(kp); ok {
				if !sha256RE.MatchString(s) {
					fail(at, kp, "expected the binary's SHA-256 as 64 hex digits (sha256sum prints it), got "+describe(s))
					return
				}
				link.SHA256 = strings.ToLower(s)
			}
		case "args":
			args, ok := p.stringArray(kp)
			if !ok {
				valid = false
				return
			}
			link.Args = args
		case "timeoutMs":
			ms, ok := p.integer(kp, 1, "milliseconds")
			if !ok {
				valid = false
				return
			}
			link.Timeout = time.Duration(ms) * time.Millisecond
		case "onFailure":
			if s, at, ok := str(kp); ok {
				switch LinkFailure(s) {
				case LinkFailDeny, LinkFailDefer:
					link.OnFailure = LinkFailure(s)
				default:
					fail(at, kp, `expected "deny" or "defer" (a failing link never allows), got `+describe(s))
				}
			}
		case "mode":
			if s, at, ok := str(kp); ok {
				switch LinkMode(s) {
				case LinkEnforce, LinkShadow:
					link.Mode = LinkMode(s)
				default:
					fail(at, kp, `expected "enforce" or "shadow", got `+describe(s))
				}
			}
		case "disclose":
			tok, at, ok := p.token()
			if !ok {
				valid = false
				return
			}
			if tok != json.Delim('[') {
				fail(at, kp, `expected an array of "cwd" and "principal", got `+describe(tok))
				p.skipFrom(tok, kp)
				return
			}
			for i := 0; !p.halted && p.dec.More(); i++ {
				ip := kp + "[" + strconv.Itoa(i) + "]"
				tok, at := p.scalar(ip)
				switch tok {
				case "cwd":
					link.DiscloseCwd = true
				case "principal":
					link.DisclosePrincipal = true
				default:
					fail(at, ip, `expected "cwd" or "principal", got `+describe(tok))
				}
			}
			p.token() // the closing ']'
		default:
			fail(keyAt, kp, fmt.Sprintf("unknown key %q: an authorizer link reads %s", key, linkKeys))
			p.skipValue(kp)
		}
	})
	for _, req := range []struct{ key, value string }{{"name", link.Name}, {"path", link.Path}, {"sha256", link.SHA256}} {
		if req.value == "" && valid {
			fail(openAt, path, fmt.Sprintf("missing %q: an authorizer link needs name, path and sha256", req.key))
		}
	}
	return link, valid
}

// stringArray reads an array of strings.
func (p *parser) stringArray(path string) ([]string, bool) {
	tok, at, ok := p.token()
	if !ok {
		return nil, false
	}
	if tok != json.Delim('[') {
		p.fail(at, path, "expected an array of strings, got "+describe(tok))
		p.skipFrom(tok, path)
		return nil, false
	}
	out := []string{}
	valid := true
	for i := 0; !p.halted && p.dec.More(); i++ {
		ip := path + "[" + strconv.Itoa(i) + "]"
		tok, at := p.scalar(ip)
		s, isStr := tok.(string)
		if !isStr {
			p.fail(at, ip, "expected a string, got "+describe(tok))
			valid = false
			continue
		}
		out = append(out, s)
	}
	p.token() // the closing ']'
	return out, valid
}
