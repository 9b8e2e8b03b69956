package reviewlog

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// The generic path (normalize, sanitize, encode) marshals each detail,
// decodes it into a tree of interfaces, walks it and marshals it again.
// That was a quarter of the broker's CPU on the rule-resolved path, so
// renderer writes the values the broker and its links actually log
// straight to JSON. It is not a second definition of the line format: for
// every value it accepts it must produce exactly the bytes of the generic
// path (render_test.go and FuzzRenderMatchesGeneric hold it to that), and
// whatever it is not sure of (a struct, a pointer, a TextMarshaler, invalid
// UTF-8, a surrogate escape, an escaped or duplicate key) it declines, and
// that whole detail goes the generic way instead.
//
// This file renders Go values; render_text.go transcodes the JSON text a
// MarshalJSON method returns, and render_encode.go writes strings as
// encoding/json does.

// maxFastDepth bounds the renderer's recursion. Real details nest two or
// three levels; deeper ones, and cycles, go to the generic path, which
// reports a cycle the way encoding/json does.
const maxFastDepth = 32

// renderer holds one Write's rendered details and the scratch space used to
// build them. Renderers are pooled: a broker writes two entries per ask and
// reusing the buffers is most of the allocation saving.
type renderer struct {
	buf      []byte
	fields   []fieldSpan
	width    int
	redacted string // Redacted capped to width, as the generic path caps it

	// Stacks shared by nested maps and objects: each level works on the
	// segment past the length it found and cuts the stack back on return.
	entries []entry
	members []member
	unq     []byte // the last decoded JSON string that had escapes
}

// fieldSpan is one detail: its key, its value and where the value's
// rendering sits in buf.
type fieldSpan struct {
	key        string
	value      any
	start, end int
}

// entry is one entry of a map being rendered, taken in one pass over the
// map so that no key is looked up twice.
type entry struct {
	key   string
	value any
}

// member is one member of a JSON object being transcoded: where its key's
// text and its value sit in the object's bytes, the key's prefix for
// sorting (keyPrefix: most keys differ in their first bytes), the value's
// kind, and what the walk knows of the strings (strictjson.Value's Plain
// and Verbatim). Offsets rather than slices keep it small and free of
// pointers, so that storing and sorting members moves plain words.
type member struct {
	prefix                       uint64
	k0, k1, v0, v1               int32
	kind                         strictjson.Kind
	plain, verbatim, keyVerbatim bool
}

// maxPooledBuf keeps a renderer that grew for one outsized entry (a long
// list of capped strings, a large MarshalJSON output) out of the pool, so
// the pool does not pin that memory for the life of the process.
const maxPooledBuf = 64 << 10

var renderers = sync.Pool{New: func() any { return new(renderer) }}

func getRenderer(width int, redacted string) *renderer {
	r := renderers.Get().(*renderer)
	r.width, r.redacted = width, redacted
	return r
}

func putRenderer(r *renderer) {
	if cap(r.buf) > maxPooledBuf || cap(r.unq) > maxPooledBuf {
		return
	}
	// Drop the references to the caller's strings so a pooled renderer
	// does not keep a past entry's details alive.
	clear(r.fields[:cap(r.fields)])
	clear(r.entries[:cap(r.entries)])
	r.buf, r.fields, r.entries, r.members = r.buf[:0], r.fields[:0], r.entries[:0], r.members[:0]
	renderers.Put(r)
}

// field appends the sanitized value of the detail key and reports whether
// it could. On false, buf past its old length is garbage for the caller to
// cut. A panic (an Error or MarshalJSON method that panics) is a decline
// too: the generic path then calls the method again and logs the panic as
// its placeholder, so the line says what it always said.
func (r *renderer) field(key string, v any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	start := len(r.buf)
	// normalize logs a top-level error as its message, without the
	// UTF-8 coercion a marshal would apply; strictjson.AppendString's own handling
	// of invalid bytes is what the generic path's encode does to it.
	if e, isErr := v.(error); isErr {
		if _, custom := v.(json.Marshaler); !custom {
			r.buf = appendCapped(r.buf, e.Error(), r.width)
			r.redact(key, start)
			return true
		}
	}
	if !r.value(v, 0) {
		return false
	}
	r.redact(key, start)
	return true
}

// redact replaces the value rendered at buf[start:] under key with the
// capped Redacted when key is sensitive. A null stays, as in the generic
// path, where a nil tree is never masked.
func (r *renderer) redact(key string, start int) {
	if string(r.buf[start:]) != "null" && IsSensitiveKey(key) {
		r.buf = append(r.buf[:start], r.redacted...)
	}
}

// value appends v. It accepts the kinds encoding/json writes without help
// and json.Marshaler values (whose output it transcodes); anything else
// returns false.
func (r *renderer) value(v any, depth int) bool {
	if depth > maxFastDepth {
		return false
	}
	switch t := v.(type) {
	case nil:
		r.buf = append(r.buf, "null"...)
	case string:
		// A marshal turns each invalid byte into U+FFFD before the cap
		// counts runes; leave that rare case to the generic path.
		if !utf8.ValidString(t) {
			return false
		}
		r.buf = appendCapped(r.buf, t, r.width)
	case bool:
		r.buf = strconv.AppendBool(r.buf, t)
	case int:
		r.buf = strconv.AppendInt(r.buf, int64(t), 10)
	case int8:
		r.buf = strconv.AppendInt(r.buf, int64(t), 10)
	case int16:
		r.buf = strconv.AppendInt(r.buf, int64(t), 10)
	case int32:
		r.buf = strconv.AppendInt(r.buf, int64(t), 10)
	case int64:
		r.buf = strconv.AppendInt(r.buf, t, 10)
	case uint:
		r.buf = strconv.AppendUint(r.buf, uint64(t), 10)
	case uint8:
		r.buf = strconv.AppendUint(r.buf, uint64(t), 10)
	case uint16:
		r.buf = strconv.AppendUint(r.buf, uint64(t), 10)
	case uint32:
		r.buf = strconv.AppendUint(r.buf, uint64(t), 10)
	case uint64:
		r.buf = strconv.AppendUint(r.buf, t, 10)
	case float64:
		return r.float(t, 64)
	case float32:
		return r.float(float64(t), 32)
	case json.Number:
		n := string(t)
		if n == "" {
			n = "0" // encoding/json writes the zero Number as 0
		}
		if !isValidNumber(n) {
			return false
		}
		r.buf = append(r.buf, n...)
	case map[string]any:
		return r.object(t, depth)
	case []any:
		if t == nil {
			r.buf = append(r.buf, "null"...)
			return true
		}
		r.buf = append(r.buf, '[')
		for i, e := range t {
			if i > 0 {
				r.buf = append(r.buf, ',')
			}
			if !r.value(e, depth+1) {
				return false
			}
		}
		r.buf = append(r.buf, ']')
	case []string:
		if t == nil {
			r.buf = append(r.buf, "null"...)
			return true
		}
		r.buf = append(r.buf, '[')
		for i, s := range t {
			if i > 0 {
				r.buf = append(r.buf, ',')
			}
			if !utf8.ValidString(s) {
				return false
			}
			r.buf = appendCapped(r.buf, s, r.width)
		}
		r.buf = append(r.buf, ']')
	case json.Marshaler:
		// encoding/json writes a nil pointer as null without calling
		// the method; pointers are rare enough here to leave to it.
		if reflect.TypeOf(v).Kind() == reflect.Pointer {
			return false
		}
		raw, err := t.MarshalJSON()
		if err != nil {
			return false
		}
		return r.text(raw, depth)
	default:
		return false
	}
	return true
}

// float writes f as encoding/json does (ES6 number formatting), which is
// also what the generic path's json.Number round trip keeps.
func (r *renderer) float(f float64, bits int) bool {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	start := len(r.buf)
	r.buf = strconv.AppendFloat(r.buf, f, format, -1, bits)
	if format == 'e' {
		// e-09 becomes e-9, as encoding/json writes it.
		b := r.buf[start:]
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			r.buf = r.buf[:len(r.buf)-1]
		}
	}
	return true
}

// object writes a map in key order, as encoding/json sorts map keys,
// masking the values under sensitive keys.
func (r *renderer) object(m map[string]any, depth int) bool {
	if m == nil {
		r.buf = append(r.buf, "null"...)
		return true
	}
	base := len(r.entries)
	defer func() { r.entries = r.entries[:base] }()
	for k, v := range m {
		// A marshal would coerce an invalid key, possibly onto another
		// key; leave that to the generic path.
		if !utf8.ValidString(k) {
			return false
		}
		r.entries = append(r.entries, entry{k, v})
	}
	slices.SortFunc(r.entries[base:], func(a, b entry) int { return strings.Compare(a.key, b.key) })
	r.buf = append(r.buf, '{')
	for i := range len(m) {
		// Index afresh: nested maps may have grown the stack.
		e := r.entries[base+i]
		if i > 0 {
			r.buf = append(r.buf, ',')
		}
		r.buf = strictjson.AppendString(r.buf, e.key)
		r.buf = append(r.buf, ':')
		start := len(r.buf)
		if !r.value(e.value, depth+1) {
			return false
		}
		r.redact(e.key, start)
	}
	r.buf = append(r.buf, '}')
	return true
}
