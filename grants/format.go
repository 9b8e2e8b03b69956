package grants

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/internal/strictjson"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// The journal file, version 2: every grant carries what it was given for,
// so that an operator can tell where each came from, and a journal that
// courier did not write (a hand-written {"grants":[{"surface":"bash",
// "pattern":"*"}]}, issue 14) is refused rather than obeyed:
//
//	{"version": 2, "side": "broker", "session": "parent", "grants": [
//	  {"surface": "bash", "pattern": "git status *",
//	   "requestId": "perm-1757000000123-4f2a9c",
//	   "asked": {"surface": "bash", "value": "git status --short"},
//	   "agent": "Explore", "recordedAt": "2026-07-15T10:11:12.345Z",
//	   "decidedBy": {"kind": "user", "via": "dialog"}, "edited": false}]}
//
// Every key is required and no other is allowed; side and session must be
// the journal's own. Version 1 (grants of {surface, pattern} only) is
// refused: it says nothing of where its grants came from.

// JournalVersion is the version of the journal format this package writes
// and reads.
const JournalVersion = 2

// maxAskedValue bounds the asked value a journal keeps, in bytes: it
// identifies the ask beside its request id (the review log has the whole
// request), and keeps a journal of many grants under the mailbox's file
// size cap.
const maxAskedValue = 512

// maxFact bounds every string of a journal entry on read.
const maxFact = rules.MaxGrantLength

// timeLayout is RFC 3339 in UTC with milliseconds, as the review log
// writes its timestamps.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// Asked is what grants were given for: the ask, who answered it and when.
// A journal keeps it beside each grant.
type Asked struct {
	// RequestID is the id of the request the grant was given on.
	RequestID string
	// Surface and Value are what was asked: the gate surface and the
	// value (the display value, cut at 512 bytes, or else the first
	// match value).
	Surface, Value string
	// Agent is the requester's agent name.
	Agent string
	// At is when the grant was recorded.
	At time.Time
	// DecidedBy is who answered: the operator at the prompt, or for a
	// child's own grants, the parent's decider under a forwarded frame.
	DecidedBy provenance.Source
	// Edited says the operator edited the pattern at the prompt rather
	// than take the child's suggestion.
	Edited bool
}

// AskedFor is what the grants of d, an answer to req, are given for,
// recorded at at.
func AskedFor(req wire.Request, d decision.Decision, at time.Time) Asked {
	a := Asked{
		RequestID: req.ID, Surface: req.Surface, Value: req.Value, Agent: req.RequesterAgentName,
		At: at, DecidedBy: d.DecidedBy, Edited: d.Grants != nil,
	}
	if ai := req.AccessIntent; ai != nil {
		// Grants live on gate surfaces (path_write, not write).
		a.Surface = ai.Surface
		if a.Value == "" && len(ai.MatchValues) > 0 {
			a.Value = ai.MatchValues[0]
		}
	}
	a.Surface, a.Value = cut(a.Surface, maxAskedValue), cut(a.Value, maxAskedValue)
	a.Agent = cut(a.Agent, maxAskedValue)
	return a
}

// cut shortens s to at most n bytes, on a rune boundary, marking the cut
// with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n-len("…")]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// check reports what a journal would refuse in a: nil when it is whole.
func (a Asked) check() error {
	switch {
	case wire.ValidateID(a.RequestID) != nil:
		return fmt.Errorf("request id %q is not a valid id", a.RequestID)
	case a.At.IsZero():
		return errors.New("no time recorded")
	case a.DecidedBy == nil:
		return errors.New("no decider")
	}
	for _, s := range []string{a.Surface, a.Value, a.Agent} {
		if len(s) > maxFact || !utf8.ValidString(s) {
			return fmt.Errorf("a fact longer than %d bytes or not UTF-8", maxFact)
		}
	}
	return nil
}

// Entry is one journaled grant and what it was given for.
type Entry struct {
	Grant rules.SessionGrant
	Asked Asked
}

// The file's shapes, for encoding.
type (
	fileJournal struct {
		Version int         `json:"version"`
		Side    Side        `json:"side"`
		Session string      `json:"session"`
		Grants  []fileEntry `json:"grants"`
	}
	fileEntry struct {
		Surface    string            `json:"surface"`
		Pattern    string            `json:"pattern"`
		RequestID  string            `json:"requestId"`
		Asked      fileAsked         `json:"asked"`
		Agent      string            `json:"agent"`
		RecordedAt string            `json:"recordedAt"`
		DecidedBy  provenance.Source `json:"decidedBy"`
		Edited     bool              `json:"edited"`
	}
	fileAsked struct {
		Surface string `json:"surface"`
		Value   string `json:"value"`
	}
)

// The keys of the file's objects, each required.
var (
	journalKeys = []string{"version", "side", "session", "grants"}
	entryKeys   = []string{"surface", "pattern", "requestId", "asked", "agent", "recordedAt", "decidedBy", "edited"}
	askedKeys   = []string{"surface", "value"}
)

// encodeJournal writes entries as the journal of session on side, without
// HTML escaping, so a pattern such as <opaque-bash-wrapper> reads as
// written.
func encodeJournal(side Side, session string, entries []Entry) ([]byte, error) {
	f := fileJournal{Version: JournalVersion, Side: side, Session: session, Grants: make([]fileEntry, len(entries))}
	for i, e := range entries {
		a := e.Asked
		if err := a.check(); err != nil {
			return nil, fmt.Errorf("grant %s %q: %w", e.Grant.Surface, e.Grant.Pattern, err)
		}
		f.Grants[i] = fileEntry{
			Surface: e.Grant.Surface, Pattern: e.Grant.Pattern, RequestID: a.RequestID,
			Asked: fileAsked{Surface: a.Surface, Value: a.Value}, Agent: a.Agent,
			RecordedAt: a.At.UTC().Format(timeLayout), DecidedBy: a.DecidedBy, Edited: a.Edited,
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeJournal reads a journal file as untrusted input. Every error
// names the member at fault and says what was expected.
func decodeJournal(data []byte, side Side, session string) ([]Entry, error) {
	if err := strictjson.Check(data); err != nil {
		return nil, err
	}
	top, err := exactObject(data, "", journalKeys, "a version 2 journal starts {version, side, session, grants}")
	if err != nil {
		if v, ok := versionOf(data); ok && v != JournalVersion {
			return nil, versionError(v)
		}
		return nil, err
	}
	var version int
	if json.Unmarshal(top["version"], &version) != nil {
		return nil, fmt.Errorf("version: expected %d", JournalVersion)
	}
	if version != JournalVersion {
		return nil, versionError(version)
	}
	var gotSide, gotSession string
	if err := str(top, "", "side", &gotSide); err != nil {
		return nil, err
	}
	if err := str(top, "", "session", &gotSession); err != nil {
		return nil, err
	}
	if Side(gotSide) != side || gotSession != session {
		return nil, fmt.Errorf("written as the %s journal of session %q, not the %s journal of session %q", gotSide, gotSession, side, session)
	}
	var items []json.RawMessage
	if strictjson.KindOf(top["grants"]) != strictjson.KindArray || json.Unmarshal(top["grants"], &items) != nil {
		return nil, errors.New("grants: expected an array")
	}
	if len(items) > rules.MaxSessionGrants {
		return nil, fmt.Errorf("grants: %d grants, more than %d", len(items), rules.MaxSessionGrants)
	}
	entries := make([]Entry, 0, len(items))
	// Each grant is checked as the session rules will record it (one
	// surface, no wildcard in it, a pattern, bounded), so that List and
	// Revoke refuse what Load would.
	valid := rules.NewSessionRules("")
	for i, item := range items {
		at := "grants[" + strconv.Itoa(i) + "]"
		e, err := decodeEntry(item, at)
		if err != nil {
			return nil, err
		}
		if _, err := valid.Record(rules.WidthProven, e.Grant); err != nil {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// decodeEntry reads one grant and its facts.
func decodeEntry(raw json.RawMessage, at string) (Entry, error) {
	m, err := exactObject(raw, at, entryKeys, "every grant says what was asked and when")
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	for _, f := range []struct {
		key string
		dst *string
	}{{"surface", &e.Grant.Surface}, {"pattern", &e.Grant.Pattern}, {"requestId", &e.Asked.RequestID}, {"agent", &e.Asked.Agent}} {
		if err := str(m, at, f.key, f.dst); err != nil {
			return Entry{}, err
		}
	}
	asked, err := exactObject(m["asked"], at+".asked", askedKeys, "what was asked")
	if err != nil {
		return Entry{}, err
	}
	if err := str(asked, at+".asked", "surface", &e.Asked.Surface); err != nil {
		return Entry{}, err
	}
	if err := str(asked, at+".asked", "value", &e.Asked.Value); err != nil {
		return Entry{}, err
	}
	var recorded string
	if err := str(m, at, "recordedAt", &recorded); err != nil {
		return Entry{}, err
	}
	if e.Asked.At, err = time.Parse(time.RFC3339Nano, recorded); err != nil {
		return Entry{}, fmt.Errorf("%s.recordedAt: expected an RFC 3339 time, got %q", at, cut(recorded, 40))
	}
	src, ok := provenance.Decode(m["decidedBy"])
	if !ok || src == nil {
		return Entry{}, fmt.Errorf("%s.decidedBy: expected who answered (a decidedBy such as {\"kind\":\"user\",\"via\":\"dialog\"})", at)
	}
	e.Asked.DecidedBy = src
	if json.Unmarshal(m["edited"], &e.Asked.Edited) != nil || isNull(m["edited"]) {
		return Entry{}, fmt.Errorf("%s.edited: expected true or false", at)
	}
	if err := e.Asked.check(); err != nil {
		return Entry{}, fmt.Errorf("%s: %w", at, err)
	}
	return e, nil
}

// versionError refuses a journal of another format.
func versionError(v int) error {
	if v == 1 {
		return errors.New("format version 1, which records no request, agent, time or decider for its grants (courier writes version 2)")
	}
	return fmt.Errorf("format version %d, expected %d", v, JournalVersion)
}

// versionOf reads the version of a journal of any shape, for a better
// message than "expected keys …".
func versionOf(data []byte) (int, bool) {
	var v struct {
		Version *int `json:"version"`
	}
	if json.Unmarshal(data, &v) != nil || v.Version == nil {
		return 0, false
	}
	return *v.Version, true
}

// exactObject decodes raw as an object holding exactly keys; at names it
// in messages ("" is the document), and why says what the keys are for.
func exactObject(raw []byte, at string, keys []string, why string) (map[string]json.RawMessage, error) {
	where := at
	if where == "" {
		where = "the journal"
	}
	var m map[string]json.RawMessage
	if strictjson.KindOf(raw) != strictjson.KindObject || json.Unmarshal(raw, &m) != nil {
		return nil, fmt.Errorf("%s: expected an object", where)
	}
	var missing []string
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			missing = append(missing, strconv.Quote(k))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: no %s: %s (keys %s)", where, strings.Join(missing, ", "), why, strings.Join(keys, ", "))
	}
	if len(m) != len(keys) {
		for k := range m {
			if !slices.Contains(keys, k) {
				return nil, fmt.Errorf("%s: unknown key %q, expected exactly %s", where, cut(k, 40), strings.Join(keys, ", "))
			}
		}
	}
	return m, nil
}

// str reads the string member key of m.
func str(m map[string]json.RawMessage, at, key string, dst *string) error {
	name := key
	if at != "" {
		name = at + "." + key
	}
	if strictjson.KindOf(m[key]) != strictjson.KindString || json.Unmarshal(m[key], dst) != nil {
		return fmt.Errorf("%s: expected a string", name)
	}
	if len(*dst) > maxFact {
		return fmt.Errorf("%s: longer than %d bytes", name, maxFact)
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
