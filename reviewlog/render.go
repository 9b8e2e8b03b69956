package reviewlog

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The generic path (normalize, sanitize, encode) marshals each detail,
// decodes it into a tree of interfaces, walks it and marshals it again.
// That was a quarter of the broker's CPU on the rule-resolved path, so
// renderer writes the values the broker and its links actually log
// straight to JSON. It is not a second definition of the line format: for
// every value it accepts it must produce exactly the bytes of the generic
// path (render_test.go and FuzzRenderMatchesGeneric hold it to that), and
// whatever it is not sure of (a struct, a pointer, a TextMarshaler, invalid
// UTF-8, a JSON escape it does not decode, a duplicate key) it declines, and
// that whole detail goes the generic way instead.

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
	keys    []string
	members []member
	tmp     []byte // an object's members while they are put in key order
	unq     []byte // the last unescaped JSON string
}

// fieldSpan is one detail: its key, its value and where the value's
// rendering sits in buf.
type fieldSpan struct {
	key        string
	value      any
	start, end int
}

// member is one member of a JSON object being transcoded: its key in the
// source text, its rendered value in buf.
type member struct {
	k0, k1 int
	v0, v1 int
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
	if cap(r.buf) > maxPooledBuf || cap(r.tmp) > maxPooledBuf || cap(r.unq) > maxPooledBuf {
		return
	}
	// Drop the references to the caller's strings so a pooled renderer
	// does not keep a past entry's details alive.
	clear(r.fields[:cap(r.fields)])
	clear(r.keys[:cap(r.keys)])
	r.buf, r.fields, r.keys, r.members = r.buf[:0], r.fields[:0], r.keys[:0], r.members[:0]
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
	// UTF-8 coercion a marshal would apply; appendString's own handling
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
	base := len(r.keys)
	defer func() { r.keys = r.keys[:base] }()
	for k := range m {
		// A marshal would coerce an invalid key, possibly onto another
		// key; leave that to the generic path.
		if !utf8.ValidString(k) {
			return false
		}
		r.keys = append(r.keys, k)
	}
	slices.Sort(r.keys[base:])
	r.buf = append(r.buf, '{')
	for i := range len(m) {
		// Index afresh: nested maps may have grown the stack.
		k := r.keys[base+i]
		if i > 0 {
			r.buf = append(r.buf, ',')
		}
		r.buf = appendString(r.buf, k)
		r.buf = append(r.buf, ':')
		start := len(r.buf)
		if !r.value(m[k], depth+1) {
			return false
		}
		r.redact(k, start)
	}
	r.buf = append(r.buf, '}')
	return true
}

// text transcodes the JSON a MarshalJSON method returned into what the
// generic path makes of it: members sorted by key, masked and capped,
// numbers kept as written, insignificant space dropped. It accepts only
// what it can decode exactly as encoding/json would, and only valid JSON.
func (r *renderer) text(src []byte, depth int) bool {
	p := jsonText{src: src}
	p.skipSpace()
	if !r.textValue(&p, depth) {
		return false
	}
	p.skipSpace()
	return p.pos == len(p.src)
}

type jsonText struct {
	src []byte
	pos int
}

func (p *jsonText) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// next returns the byte at pos and moves past it, or 0 at the end.
func (p *jsonText) next() byte {
	if p.pos >= len(p.src) {
		return 0
	}
	c := p.src[p.pos]
	p.pos++
	return c
}

func (p *jsonText) literal(word string) bool {
	if len(p.src)-p.pos < len(word) || string(p.src[p.pos:p.pos+len(word)]) != word {
		return false
	}
	p.pos += len(word)
	return true
}

func (r *renderer) textValue(p *jsonText, depth int) bool {
	if depth > maxFastDepth || p.pos >= len(p.src) {
		return false
	}
	switch c := p.src[p.pos]; {
	case c == '{':
		return r.textObject(p, depth)
	case c == '[':
		p.pos++
		r.buf = append(r.buf, '[')
		p.skipSpace()
		if p.pos < len(p.src) && p.src[p.pos] == ']' {
			p.pos++
			r.buf = append(r.buf, ']')
			return true
		}
		for {
			p.skipSpace()
			if !r.textValue(p, depth+1) {
				return false
			}
			p.skipSpace()
			switch p.next() {
			case ',':
				r.buf = append(r.buf, ',')
			case ']':
				r.buf = append(r.buf, ']')
				return true
			default:
				return false
			}
		}
	case c == '"':
		s, ok := p.str(&r.unq)
		if !ok {
			return false
		}
		r.buf = appendCapped(r.buf, s, r.width)
	case c == 't':
		if !p.literal("true") {
			return false
		}
		r.buf = append(r.buf, "true"...)
	case c == 'f':
		if !p.literal("false") {
			return false
		}
		r.buf = append(r.buf, "false"...)
	case c == 'n':
		if !p.literal("null") {
			return false
		}
		r.buf = append(r.buf, "null"...)
	case c == '-' || '0' <= c && c <= '9':
		start := p.pos
		for p.pos < len(p.src) && strings.IndexByte("0123456789+-.eE", p.src[p.pos]) >= 0 {
			p.pos++
		}
		// UseNumber keeps the literal as written, and encode writes it
		// back verbatim.
		if !isValidNumber(string(p.src[start:p.pos])) {
			return false
		}
		r.buf = append(r.buf, p.src[start:p.pos]...)
	default:
		return false
	}
	return true
}

// textObject renders the members in the order they come, then rewrites
// them in key order: decoding into a map and encoding it again sorts them.
func (r *renderer) textObject(p *jsonText, depth int) bool {
	p.pos++ // '{'
	region := len(r.buf)
	base := len(r.members)
	defer func() { r.members = r.members[:base] }()
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		r.buf = append(r.buf, "{}"...)
		return true
	}
	for {
		p.skipSpace()
		if p.next() != '"' {
			return false
		}
		// Keys must be plain: an escaped key would have to be decoded
		// before it can be sorted and judged.
		k0 := p.pos
		for p.pos < len(p.src) && p.src[p.pos] != '"' {
			if c := p.src[p.pos]; c == '\\' || c < ' ' {
				return false
			}
			p.pos++
		}
		k1 := p.pos
		if p.next() != '"' || !utf8.Valid(p.src[k0:k1]) {
			return false
		}
		p.skipSpace()
		if p.next() != ':' {
			return false
		}
		p.skipSpace()
		v0 := len(r.buf)
		if !r.textValue(p, depth+1) {
			return false
		}
		if string(r.buf[v0:]) != "null" && isSensitiveKeyBytes(p.src[k0:k1]) {
			r.buf = append(r.buf[:v0], r.redacted...)
		}
		r.members = append(r.members, member{k0: k0, k1: k1, v0: v0 - region, v1: len(r.buf) - region})
		p.skipSpace()
		c := p.next()
		if c == '}' {
			break
		}
		if c != ',' {
			return false
		}
	}
	ms := r.members[base:]
	src := p.src
	slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(src[a.k0:a.k1], src[b.k0:b.k1]) })
	for i := 1; i < len(ms); i++ {
		// A decoded map keeps only the last of a repeated key; rare
		// enough not to reproduce.
		if bytes.Equal(src[ms[i-1].k0:ms[i-1].k1], src[ms[i].k0:ms[i].k1]) {
			return false
		}
	}
	r.tmp = append(r.tmp[:0], r.buf[region:]...)
	r.buf = append(r.buf[:region], '{')
	for i, m := range ms {
		if i > 0 {
			r.buf = append(r.buf, ',')
		}
		r.buf = appendString(r.buf, src[m.k0:m.k1])
		r.buf = append(r.buf, ':')
		r.buf = append(r.buf, r.tmp[m.v0:m.v1]...)
	}
	r.buf = append(r.buf, '}')
	return true
}

// str reads the string literal at pos and returns its decoded bytes: a
// slice of the source when it has no escapes, else scratch. It declines
// invalid UTF-8 and escaped surrogates, which encoding/json would replace
// with U+FFFD, and anything that is not valid JSON.
func (p *jsonText) str(scratch *[]byte) ([]byte, bool) {
	p.pos++ // '"'
	start := p.pos
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == '"':
			s := p.src[start:p.pos]
			p.pos++
			return s, utf8.Valid(s)
		case c == '\\':
			return p.escapedStr(start, scratch)
		case c < ' ':
			return nil, false
		}
		p.pos++
	}
	return nil, false
}

func (p *jsonText) escapedStr(start int, scratch *[]byte) ([]byte, bool) {
	out := append((*scratch)[:0], p.src[start:p.pos]...)
	defer func() { *scratch = out[:0] }()
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			return out, utf8.Valid(out)
		case c < ' ':
			return nil, false
		case c != '\\':
			out = append(out, c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.src) {
			return nil, false
		}
		e := p.src[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if p.pos+4 > len(p.src) {
				return nil, false
			}
			var u rune
			for _, h := range p.src[p.pos : p.pos+4] {
				switch {
				case '0' <= h && h <= '9':
					u = u<<4 | rune(h-'0')
				case 'a' <= h && h <= 'f':
					u = u<<4 | rune(h-'a'+10)
				case 'A' <= h && h <= 'F':
					u = u<<4 | rune(h-'A'+10)
				default:
					return nil, false
				}
			}
			p.pos += 4
			if 0xD800 <= u && u < 0xE000 {
				return nil, false // surrogates: pairs and strays alike
			}
			out = utf8.AppendRune(out, u)
		default:
			return nil, false
		}
	}
	return nil, false
}

// appendCapped appends s as a JSON string, cut to width runes as capString
// cuts it.
func appendCapped[S string | []byte](dst []byte, s S, width int) []byte {
	if len(s) <= width {
		return appendString(dst, s)
	}
	cut, runes := len(s), 0
	for i := 0; i < len(s); runes++ {
		if runes == width-1 {
			cut = i
			break
		}
		i += runeLen(s[i:])
	}
	if cut == len(s) || runesIn(s[cut:]) <= 1 {
		// At most width runes: capString leaves it whole.
		return appendString(dst, s)
	}
	dst = appendString(dst, s[:cut])
	dst = dst[:len(dst)-1] // reopen the string for the ellipsis
	dst = append(dst, ellipsis...)
	return append(dst, '"')
}

func decodeRune[S string | []byte](s S) (rune, int) {
	n := min(len(s), utf8.UTFMax)
	return utf8.DecodeRuneInString(string(s[:n]))
}

// runeLen is the width of the rune s starts with, an invalid byte counting
// as a rune of its own, as ranging over a string counts it.
func runeLen[S string | []byte](s S) int {
	if s[0] < utf8.RuneSelf {
		return 1
	}
	_, size := decodeRune(s)
	return size
}

func runesIn[S string | []byte](s S) int {
	n := 0
	for i := 0; i < len(s); n++ {
		i += runeLen(s[i:])
	}
	return n
}

// appendString is encoding/json's string encoder with HTML escaping off,
// which is how encode writes every string of the generic path: ", \ and
// control bytes escaped, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped, everything else as it is.
func appendString[S string | []byte](dst []byte, src S) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(src); {
		if b := src[i]; b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, src[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := decodeRune(src[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, src[start:]...)
	return append(dst, '"')
}

// isValidNumber is encoding/json's JSON number grammar, which both its
// encoder (for json.Number) and its compaction of MarshalJSON output apply.
func isValidNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	default:
		return false
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}
