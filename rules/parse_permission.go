package rules

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

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

// permissionObject reads the permission object v and returns its expanded
// rules with the given origin.
func (p *parser) permissionObject(path string, v strictjson.Value, origin Origin) Permission {
	var perm Permission
	var surfaces []surfaceEntry
	p.object(path, v, func(key string, keyAt int, v strictjson.Value) {
		kp := memberPath(path, key)
		if key == "*" {
			p.skip(kp, v)
			a, ok := actionOf(v)
			if !ok {
				p.fail(v.Offset(), kp, `expected "allow", "ask" or "deny" (the action when no rule matches), got `+describe(v))
				return
			}
			perm.Default = &Rule{Surface: "*", Pattern: "*", SurfaceWide: true, Action: a, Origin: OriginDefault, At: p.at(v.Offset())}
			return
		}
		if key == "" {
			p.fail(keyAt, kp, "empty surface name")
			p.skip(kp, v)
			return
		}
		p.checkSurfaceName(keyAt, kp, key)
		se := surfaceEntry{surface: key, at: keyAt}
		if a, ok := actionOf(v); ok {
			se.patterns = []patternEntry{{pattern: "*", action: a, wide: true, at: v.Offset()}}
		} else if v.Kind() == strictjson.KindObject {
			se.patterns = p.patternMap(kp, v)
		} else {
			p.fail(v.Offset(), kp, `expected "allow", "ask", "deny" or an object mapping patterns to actions, got `+describe(v))
			p.skip(kp, v)
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

// patternMap reads the pattern → action object v.
func (p *parser) patternMap(path string, v strictjson.Value) []patternEntry {
	var entries []patternEntry
	p.object(path, v, func(key string, keyAt int, v strictjson.Value) {
		kp := path + "[" + strconv.Quote(key) + "]"
		if a, ok := actionOf(v); ok {
			entries = append(entries, patternEntry{pattern: key, action: a, at: keyAt})
			return
		}
		if v.Kind() == strictjson.KindObject {
			if reason, ok := p.denyObject(kp, v); ok {
				entries = append(entries, patternEntry{pattern: key, action: Deny, reason: reason, at: keyAt})
			}
			return
		}
		p.fail(v.Offset(), kp, `expected "allow", "ask", "deny" or {"action":"deny","reason":...}, got `+describe(v))
		p.skip(kp, v)
	})
	return jsOrder(p, path, entries, func(e *patternEntry) string { return path + "[" + strconv.Quote(e.pattern) + "]" })
}

// denyObject reads {"action":"deny","reason":"..."}, the object v. pi
// accepts the object form for deny only; reason is optional there too.
func (p *parser) denyObject(path string, v strictjson.Value) (reason string, ok bool) {
	action, actionAt := "", -1
	valid := true
	p.object(path, v, func(key string, keyAt int, v strictjson.Value) {
		switch key {
		case "action":
			p.skip(path+".action", v)
			s, isStr := stringOf(v)
			if !isStr {
				p.fail(v.Offset(), path+".action", `expected "deny", got `+describe(v))
				valid = false
				return
			}
			action, actionAt = s, v.Offset()
		case "reason":
			p.skip(path+".reason", v)
			s, isStr := stringOf(v)
			if !isStr {
				p.fail(v.Offset(), path+".reason", "expected a string, got "+describe(v))
				valid = false
				return
			}
			reason = s
		default:
			msg := fmt.Sprintf(`unknown key %q, expected {"action":"deny","reason":...}`, key)
			if s := didYouMean(key, []string{"action", "reason"}); s != "" {
				msg += ": " + s
			}
			p.fail(keyAt, path, msg)
			p.skip(path, v)
			valid = false
		}
	})
	switch {
	case !valid:
		return "", false
	case actionAt < 0:
		p.fail(v.Offset(), path, `missing "action", expected {"action":"deny","reason":...}`)
		return "", false
	case action != string(Deny):
		p.fail(actionAt, path+".action", fmt.Sprintf(`expected "deny": a reason is valid for deny only, so write other actions as a plain string, got %q`, action))
		return "", false
	}
	return reason, true
}

// agentKeys are the keys of an agent entry.
var agentKeys = []string{"permission", "users"}

// agents reads the agents object v: each agent's permission object, and
// into users each agent's users list, when it has one.
func (p *parser) agents(path string, v strictjson.Value, users map[string][]int) map[string]Permission {
	out := make(map[string]Permission)
	p.object(path, v, func(name string, nameAt int, entry strictjson.Value) {
		ap := memberPath(path, name)
		if name == "" {
			p.fail(nameAt, ap, "empty agent name")
			p.skip(ap, entry)
			return
		}
		if entry.Kind() != strictjson.KindObject {
			p.fail(entry.Offset(), ap, `expected an object {"permission": {...}}, got `+describe(entry))
			p.skip(ap, entry)
			return
		}
		var perm Permission
		found, unknown := false, false
		p.object(ap, entry, func(key string, keyAt int, v strictjson.Value) {
			kp := memberPath(ap, key)
			if key == "users" {
				if uids, ok := p.users(kp, v); ok {
					users[name] = uids
				}
				return
			}
			if key != "permission" {
				// An error, not a warning: a misspelt "permission" would
				// drop the agent's overrides, its denies included, and a
				// misspelt "users" would vouch for no one.
				msg := "unknown key"
				if s := didYouMean(key, agentKeys); s != "" {
					msg += ": " + s
				}
				p.fail(keyAt, kp, msg+" (an agent entry reads permission and users)")
				p.skip(kp, v)
				unknown = true
				return
			}
			if !p.openObject(kp, v, "expected an object mapping surfaces to actions") {
				return
			}
			perm = p.permissionObject(kp, v, OriginAgent)
			found = true
		})
		if !found && !unknown {
			p.warn(entry.Offset(), ap, "no permission object, so this agent has no overrides")
		}
		out[name] = perm
	})
	return out
}

// actionOf reads an action string.
func actionOf(v strictjson.Value) (Action, bool) {
	s, ok := stringOf(v)
	if !ok {
		return "", false
	}
	return parseAction(s)
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
// read first (the order TestPermissionParsing's "sugar first, explicit
// member after" case pins), or nil for any other surface.
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
