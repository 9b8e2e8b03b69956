package reviewlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Redacted replaces every non-null value stored under a sensitive key name.
const Redacted = "[redacted]"

// ellipsis marks a string cut by the width cap, as pi's log-field-cap does.
const ellipsis = "…"

// sensitiveKey is pi's log-redaction key pattern, verbatim, so a line that
// pi would mask is masked here too and an operator's grep habits carry over.
//
// It and camelKeyTail are compiled on first use, not at init: a child
// process links reviewlog and most never write a log.
var sensitiveKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)authorization|api[-_]?keys?|private[-_]?keys?|secret|token|password|passwd|credential|cookie|(?:^|[-_])keys?(?:$|[-_])`)
})

// camelKeyTail is pi's second, case-sensitive test: a camel-case "Key" or
// "Keys" tail (sshKey, signingKeys). It is kept apart from sensitiveKey
// because folding it into the (?i) pattern would also mask "monkey" and
// "turkey".
var camelKeyTail = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`Keys?$`) })

// IsSensitiveKey reports whether values under the key name are masked in the
// review log. Callers that build details from untrusted maps can use it to
// decide what not to collect in the first place.
func IsSensitiveKey(key string) bool {
	if v, ok := sensitiveMemo.lookup(key); ok {
		return v
	}
	v := matchSensitive(key)
	sensitiveMemo.remember(key, v)
	return v
}

// isSensitiveKeyBytes is IsSensitiveKey for a key still in JSON text, so a
// key the memo knows costs no string.
func isSensitiveKeyBytes(key []byte) bool {
	if v, ok := sensitiveMemo.lookup(string(key)); ok {
		return v
	}
	return IsSensitiveKey(string(key))
}

func matchSensitive(key string) bool {
	return sensitiveKey().MatchString(key) || camelKeyTail().MatchString(key)
}

// sensitiveMemo remembers the regexps' answers. Matching them was 6 % of a
// busy broker's CPU, for keys drawn almost all from a few dozen names the
// code spells out. Keys can also come from plugins and requests, so the memo
// is bounded in entries and key length: past the bound a key is matched
// every time, as before, and a flood of new names costs no memory.
//
// Readers load an immutable map without locking; an addition copies it.
// Copies stop once the bound is reached, so they cost a few hundred
// thousand map writes over a process's life at most.
var sensitiveMemo memo

const (
	memoMaxKeys   = 512
	memoMaxKeyLen = 64
)

type memo struct {
	mu sync.Mutex // serializes additions
	m  atomic.Pointer[map[string]bool]
}

func (c *memo) lookup(key string) (sensitive, ok bool) {
	if m := c.m.Load(); m != nil {
		sensitive, ok = (*m)[key]
	}
	return sensitive, ok
}

func (c *memo) remember(key string, sensitive bool) {
	if len(key) > memoMaxKeyLen {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.m.Load()
	if old != nil && len(*old) >= memoMaxKeys {
		return
	}
	var m map[string]bool
	if old == nil {
		m = map[string]bool{}
	} else {
		if _, ok := (*old)[key]; ok {
			return
		}
		m = maps.Clone(*old)
	}
	// The key may be a slice of a large request body; keep only its bytes.
	m[strings.Clone(key)] = sensitive
	c.m.Store(&m)
}

// sanitize masks sensitive keys in a JSON tree and then caps every string in
// it. The tree holds only what encoding/json decodes into with UseNumber:
// map[string]any, []any, string, json.Number, bool and nil. Masking runs
// first so a masked value is masked whole rather than half-capped and still
// partly readable.
func sanitize(v any, width int) any {
	return capStrings(redact(v), width)
}

// redact replaces the values under sensitive keys, leaving null alone (a null
// carries nothing to hide and says the field was absent) and not descending
// into a masked subtree.
func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if child != nil && IsSensitiveKey(k) {
				t[k] = Redacted
				continue
			}
			t[k] = redact(child)
		}
	case []any:
		for i, child := range t {
			t[i] = redact(child)
		}
	}
	return v
}

// capStrings cuts every string value, at any depth, to width runes. Keys are
// not cut: they come from code, not from the data being logged.
func capStrings(v any, width int) any {
	switch t := v.(type) {
	case string:
		return capString(t, width)
	case map[string]any:
		for k, child := range t {
			t[k] = capStrings(child, width)
		}
	case []any:
		for i, child := range t {
			t[i] = capStrings(child, width)
		}
	}
	return v
}

// capString returns s unchanged when it has at most width runes, else its
// first width-1 runes and an ellipsis, so the result is exactly width runes
// and a reader can tell a cut value from a short one.
func capString(s string, width int) string {
	if len(s) <= width || utf8.RuneCountInString(s) <= width {
		return s
	}
	cut, runes := 0, 0
	for i := range s {
		if runes == width-1 {
			cut = i
			break
		}
		runes++
	}
	return s[:cut] + ellipsis
}

// normalize turns an arbitrary Go value into the generic JSON tree that
// sanitize walks, by the same route the line will take to disk: struct tags,
// MarshalJSON methods (the provenance union) and json.RawMessage all apply.
// UseNumber keeps integers such as ms timestamps exact instead of rounding
// them through float64.
//
// An error value is logged as its message, as pi's serializer does:
// encoding/json would write most errors as {} and lose what went wrong.
//
// A value encoding/json refuses (a channel, a NaN, a cycle, a MarshalJSON
// that fails or panics) yields an error; the caller logs a placeholder in its
// place.
func normalize(v any) (tree any, err error) {
	defer func() {
		if r := recover(); r != nil {
			tree, err = nil, fmt.Errorf("marshal panicked: %v", r)
		}
	}()
	if e, ok := v.(error); ok {
		if _, custom := v.(json.Marshaler); !custom {
			return e.Error(), nil
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("decode own encoding: %w", err)
	}
	return tree, nil
}

// encode writes a sanitized tree back to JSON. HTML escaping is off because
// the log is read by people and jq, not embedded in a page, and "<" reads
// better than "\u003c" in a command line.
func encode(tree any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tree); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
