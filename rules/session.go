package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// SessionGrant is one session grant: allow Pattern on Surface for the rest of
// the session (pi's ApprovalGrant).
type SessionGrant struct {
	Surface string `json:"surface"`
	Pattern string `json:"pattern"`
}

// Width is how wide a grant is recorded (pi's sessionGrantWidth).
type Width string

// The two widths. The zero Width means WidthProven, the least privilege.
const (
	// WidthProven records the grant's surface as given.
	WidthProven Width = "proven"
	// WidthFamily records the bare family of a directional surface
	// (path_write → path), which covers both directions.
	WidthFamily Width = "family"
)

// Limits on session grants. A grant comes from a child's suggestion that a
// human approved, and every Resolve scans all grants, so both the count
// and the size are bounded.
const (
	MaxSessionGrants  = 10_000
	MaxGrantLength    = 4096
	MaxSnapshotSize   = 8 << 20
	SnapshotVersion   = 1
	snapshotGrantsKey = "grants"
)

// ErrInvalidGrant is wrapped by every error about a grant's content.
var ErrInvalidGrant = errors.New("invalid session grant")

// SessionRules is the broker's whole-session grants, recorded as allow
// rules with origin session that sit above every config rule. It is safe
// for concurrent use: readers never block, writers are serialized.
type SessionRules struct {
	home string
	mu   sync.Mutex // serializes writers; guards have
	// have holds every recorded grant, for deduplication.
	have map[SessionGrant]struct{}
	// rules is append-only between Restores: a writer appends past the
	// length readers hold and then publishes the longer slice, so readers
	// never see a slot being written.
	rules atomic.Pointer[[]compiledRule]
}

// NewSessionRules returns an empty set whose patterns expand `~` and
// `$HOME` to home; use the Policy's home.
func NewSessionRules(home string) *SessionRules {
	s := &SessionRules{home: home, have: make(map[SessionGrant]struct{})}
	s.rules.Store(new([]compiledRule))
	return s
}

func (s *SessionRules) load() []compiledRule {
	if s == nil {
		return nil
	}
	return *s.rules.Load()
}

// Record adds grants at width (pi's SessionApproval.forGrants().atWidth()).
// Each grant is recorded on its own surface; a bare family surface, or any
// directional surface at WidthFamily, is recorded on both the _read and
// _write members, since rules never live on a bare family key. A grant
// already present is not added twice. It returns the grants as recorded.
// Nothing is recorded when any grant is invalid.
func (s *SessionRules) Record(width Width, grants ...SessionGrant) ([]SessionGrant, error) {
	switch width {
	case "", WidthProven, WidthFamily:
	default:
		return nil, fmt.Errorf("%w: width %q, expected %q or %q", ErrInvalidGrant, width, WidthProven, WidthFamily)
	}
	var expanded []SessionGrant
	for i, g := range grants {
		if err := validateGrant(g); err != nil {
			return nil, fmt.Errorf("grant %d: %w", i, err)
		}
		surface := g.Surface
		if width == WidthFamily {
			surface = familyOf(surface)
		}
		members := familyMembers(surface)
		if members == nil {
			members = []string{surface}
		}
		for _, m := range members {
			expanded = append(expanded, SessionGrant{Surface: m, Pattern: g.Pattern})
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.load()
	var added []SessionGrant
	for _, g := range expanded {
		if _, dup := s.have[g]; dup || slices.Contains(added, g) {
			continue
		}
		added = append(added, g)
	}
	if len(next)+len(added) > MaxSessionGrants {
		return nil, fmt.Errorf("%w: the session holds %d grants and may hold at most %d", ErrInvalidGrant, len(next), MaxSessionGrants)
	}
	for _, g := range added {
		next = append(next, compileRule(sessionRule(g), s.home))
		s.have[g] = struct{}{}
	}
	s.rules.Store(&next)
	return expanded, nil
}

func sessionRule(g SessionGrant) Rule {
	return Rule{Surface: g.Surface, Pattern: g.Pattern, Action: Allow, Origin: OriginSession}
}

// validateGrant refuses grants that would mean more than one surface or
// nothing at all. A wildcard surface would make one approval cover every
// surface it matches, which no dialog shows the human.
func validateGrant(g SessionGrant) error {
	switch {
	case g.Surface == "":
		return fmt.Errorf("%w: empty surface", ErrInvalidGrant)
	case strings.ContainsAny(g.Surface, "*?"):
		return fmt.Errorf("%w: surface %q has a wildcard; a grant names one surface", ErrInvalidGrant, g.Surface)
	case g.Pattern == "":
		return fmt.Errorf("%w: empty pattern", ErrInvalidGrant)
	case len(g.Surface) > MaxGrantLength || len(g.Pattern) > MaxGrantLength:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidGrant, MaxGrantLength)
	case !utf8.ValidString(g.Surface) || !utf8.ValidString(g.Pattern):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidGrant)
	}
	return nil
}

// familyOf returns the bare family of a directional surface, or the
// surface itself.
func familyOf(surface string) string {
	for _, f := range []string{"path", "external_directory"} {
		if surface == f+"_read" || surface == f+"_write" {
			return f
		}
	}
	return surface
}

// Grants returns every recorded grant, in recording order.
func (s *SessionRules) Grants() []SessionGrant {
	rules := s.load()
	out := make([]SessionGrant, len(rules))
	for i, r := range rules {
		out[i] = SessionGrant{Surface: r.Surface, Pattern: r.Pattern}
	}
	return out
}

// Len returns the number of recorded grants.
func (s *SessionRules) Len() int { return len(s.load()) }

// Snapshot is the journal shape of the session rules:
//
//	{"version":1,"grants":[{"surface":"bash","pattern":"git status *"}]}
//
// Grants are as recorded (families already expanded), in order.
type Snapshot struct {
	Version int            `json:"version"`
	Grants  []SessionGrant `json:"grants"`
}

// Snapshot returns the current grants for journaling.
func (s *SessionRules) Snapshot() Snapshot {
	return Snapshot{Version: SnapshotVersion, Grants: s.Grants()}
}

// Restore replaces every grant with those of snap, which is validated as
// Record validates (DecodeSnapshot has checked its shape).
func (s *SessionRules) Restore(snap Snapshot) error {
	if snap.Version != SnapshotVersion {
		return fmt.Errorf("%w: snapshot version %d, expected %d", ErrInvalidGrant, snap.Version, SnapshotVersion)
	}
	if len(snap.Grants) > MaxSessionGrants {
		return fmt.Errorf("%w: %d grants, more than %d", ErrInvalidGrant, len(snap.Grants), MaxSessionGrants)
	}
	fresh := NewSessionRules(s.home)
	if _, err := fresh.Record(WidthProven, snap.Grants...); err != nil {
		return fmt.Errorf("restore session rules: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.have = fresh.have
	s.rules.Store(fresh.rules.Load())
	return nil
}

// DecodeSnapshot reads a journaled snapshot as untrusted input: at most
// MaxSnapshotSize bytes, one JSON object with exactly the keys version (1)
// and grants (an array of {surface, pattern} objects with exactly those
// keys), no key repeated in any letter case, every grant valid. Errors
// wrap ErrInvalidGrant and name the failing member.
func DecodeSnapshot(data []byte) (Snapshot, error) {
	bad := func(path, format string, args ...any) (Snapshot, error) {
		return Snapshot{}, fmt.Errorf("%w: snapshot %s: %s", ErrInvalidGrant, path, fmt.Sprintf(format, args...))
	}
	if len(data) > MaxSnapshotSize {
		return bad("", "larger than %d bytes", MaxSnapshotSize)
	}
	if err := strictjson.Check(data); err != nil {
		return Snapshot{}, fmt.Errorf("%w: snapshot: %w", ErrInvalidGrant, err)
	}
	top, ok := exactObject(data, "version", snapshotGrantsKey)
	if !ok {
		return bad("", `expected exactly {"version":1,"grants":[...]}`)
	}
	if v := strings.TrimSpace(string(top["version"])); v != strconv.Itoa(SnapshotVersion) {
		return bad("version", "expected %d, got %s", SnapshotVersion, shorten(v, 40))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(top[snapshotGrantsKey], &items); err != nil || strictjson.KindOf(top[snapshotGrantsKey]) != strictjson.KindArray {
		return bad("grants", "expected an array")
	}
	if len(items) > MaxSessionGrants {
		return bad("grants", "%d grants, more than %d", len(items), MaxSessionGrants)
	}
	snap := Snapshot{Version: SnapshotVersion, Grants: make([]SessionGrant, 0, len(items))}
	for i, item := range items {
		at := "grants[" + strconv.Itoa(i) + "]"
		m, ok := exactObject(item, "surface", "pattern")
		if !ok {
			return bad(at, "expected exactly {surface, pattern}")
		}
		var g SessionGrant
		if strictjson.KindOf(m["surface"]) != strictjson.KindString || json.Unmarshal(m["surface"], &g.Surface) != nil {
			return bad(at+".surface", "expected a string")
		}
		if strictjson.KindOf(m["pattern"]) != strictjson.KindString || json.Unmarshal(m["pattern"], &g.Pattern) != nil {
			return bad(at+".pattern", "expected a string")
		}
		if err := validateGrant(g); err != nil {
			return Snapshot{}, fmt.Errorf("snapshot %s: %w", at, err)
		}
		snap.Grants = append(snap.Grants, g)
	}
	return snap, nil
}

// exactObject decodes raw as an object holding exactly the given keys.
func exactObject(raw []byte, keys ...string) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if strictjson.KindOf(raw) != strictjson.KindObject || json.Unmarshal(raw, &m) != nil || len(m) != len(keys) {
		return nil, false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return nil, false
		}
	}
	return m, true
}
