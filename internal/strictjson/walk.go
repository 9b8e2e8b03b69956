package strictjson

import (
	"bytes"
	"errors"
)

// The walker: reading the parts of a well-formed document, one Check or
// Valid accepted (or encoding/json: rules reads a config whose repeated
// keys it reports itself). It trusts the bytes, so finding where a value
// ends is a skip over brackets and strings, not a parse, and nothing is
// decoded until a caller asks for it. On bytes that are not well formed it
// stops with an error rather than loop or read out of bounds, but it does
// not find every fault: that is Check's job.

// Kind is the kind of a JSON value, named by the byte that starts it: 'n',
// 'f', 't', '"', '{', '[' and, for every number whatever its sign or first
// digit, '0'. A reader can compare it with that byte.
type Kind byte

// The kinds of JSON value.
const (
	KindInvalid Kind = 0 // no value: only space, or a byte no value starts with
	KindNull    Kind = 'n'
	KindFalse   Kind = 'f'
	KindTrue    Kind = 't'
	KindString  Kind = '"'
	KindNumber  Kind = '0'
	KindObject  Kind = '{'
	KindArray   Kind = '['
)

// Noun names the kind for an error message: "a string", "an object",
// "null"... and "nothing" for KindInvalid.
func (k Kind) Noun() string {
	switch k {
	case KindNull:
		return "null"
	case KindFalse, KindTrue:
		return "a boolean"
	case KindString:
		return "a string"
	case KindNumber:
		return "a number"
	case KindObject:
		return "an object"
	case KindArray:
		return "an array"
	}
	return "nothing"
}

// KindOf returns the kind of the value raw starts with, after any space.
func KindOf(raw []byte) Kind {
	i := skipSpace(raw, 0)
	if i >= len(raw) {
		return KindInvalid
	}
	return kindOfByte(raw[i])
}

func kindOfByte(ch byte) Kind { return kinds[ch] }

// kinds maps the first byte of a value to its kind: one load, as readers
// ask the kind of every value they look at.
var kinds = func() (t [256]Kind) {
	for _, ch := range []byte{'n', 'f', 't', '"', '{', '['} {
		t[ch] = Kind(ch)
	}
	for _, ch := range []byte("-0123456789") {
		t[ch] = KindNumber
	}
	return t
}()

// errUnchecked stops a walk over bytes that cannot be well formed.
var errUnchecked = errors.New("strictjson: not a well-formed JSON document")

// errNotContainer is the error of a walk over the members of a value that
// is not an object, or the items of one that is not an array.
var errNotContainer = errors.New("strictjson: not an object or array of the kind walked")

// Value is one value of a well-formed document: the document and the extent
// of the value in it, so that a walk hands out each value's own bytes and
// can still say where in the document it starts. The zero Value is of
// KindInvalid.
type Value struct {
	doc        []byte
	start, end int
	// plain marks a string the walk that found it saw, on its way over
	// it, to be ASCII without escapes (see Verbatim).
	plain bool
}

// Root returns the value of doc, a well-formed document, without the space
// around it.
func Root(doc []byte) Value {
	start, end := skipSpace(doc, 0), len(doc)
	for end > start && isSpace(doc[end-1]) {
		end--
	}
	return Value{doc: doc, start: start, end: end}
}

// Raw returns the bytes of v, a subslice of the document with no spare
// capacity, so appending to it copies rather than overwrite the document.
func (v Value) Raw() []byte { return v.doc[v.start:v.end:v.end] }

// Offset returns where v starts, in bytes from the start of the document
// Root was given.
func (v Value) Offset() int { return v.start }

// Text returns the text of v, a string, as Unquote reads it, without
// scanning it again when the walk that found v saw it needs no decoding.
func (v Value) Text() []byte {
	if v.plain {
		return v.doc[v.start+1 : v.end-1 : v.end-1]
	}
	return Unquote(v.Raw())
}

// Plain reports, as the function Plain does, whether the text of v, a
// string, is its bytes between the quotes as they stand.
func (v Value) Plain() bool { return v.plain || Plain(v.Raw()) }

// Verbatim reports whether v is a string the walk that found it saw to be
// ASCII without escapes: its text is its bytes, and a JSON writer writes
// it, quotes and all, exactly as it stands. It is false, though the string
// may be such, where the walk did not look: past the first bytes of a long
// string, or on a Value that Root returned.
func (v Value) Verbatim() bool { return v.plain }

// Kind returns the kind of v.
func (v Value) Kind() Kind {
	if v.start >= v.end {
		return KindInvalid
	}
	return kindOfByte(v.doc[v.start])
}

// Members returns a walk over the members of v, in document order. If v
// is not an object the walk yields nothing and its Err is not nil.
func (v Value) Members() Members {
	if v.Kind() != KindObject {
		return Members{pos: -1, err: errNotContainer}
	}
	return Members{doc: v.doc[:v.end], pos: v.start + 1}
}

// Items returns a walk over the items of v, in order. If v is not an
// array the walk yields nothing and its Err is not nil.
func (v Value) Items() Items {
	if v.Kind() != KindArray {
		return Items{pos: -1, err: errNotContainer}
	}
	return Items{doc: v.doc[:v.end], pos: v.start + 1}
}

// Members walks the members of an object:
//
//	m := v.Members()
//	for m.Next() {
//		use(m.Key(), m.Value())
//	}
//	if err := m.Err(); err != nil { ... }
//
// It allocates nothing.
type Members struct {
	doc []byte // the document, cut at the end of the object
	pos int    // where the next member (or its comma) is looked for; -1 when done
	// The current member: its key and value as extents of doc, and
	// whether each is a string seen to be plain.
	keyStart, keyEnd, valStart, valEnd int
	keyPlain, valPlain                 bool
	err                                error
}

// Next moves to the next member and reports whether there is one.
func (m *Members) Next() bool {
	if m.pos < 0 {
		return false
	}
	d := m.doc
	i := skipSpace(d, m.pos)
	if i >= len(d) {
		return m.fail()
	}
	switch d[i] {
	case '}':
		m.pos = -1
		return false
	case ',':
		i = skipSpace(d, i+1)
	}
	keyEnd, keyPlain := skipString(d, i)
	if keyEnd < 0 {
		return m.fail()
	}
	m.keyStart, m.keyEnd, m.keyPlain = i, keyEnd, keyPlain
	i = skipSpace(d, keyEnd)
	if i >= len(d) || d[i] != ':' {
		return m.fail()
	}
	start := skipSpace(d, i+1)
	end, plain := skipValue(d, start)
	if end <= start {
		return m.fail()
	}
	m.valStart, m.valEnd, m.valPlain, m.pos = start, end, plain, end
	return true
}

func (m *Members) fail() bool {
	m.pos, m.err = -1, errUnchecked
	return false
}

// Key returns the current member's key: a string value, quotes included,
// whose text Unquote reads.
func (m *Members) Key() Value {
	return Value{doc: m.doc, start: m.keyStart, end: m.keyEnd, plain: m.keyPlain}
}

// Value returns the current member's value.
func (m *Members) Value() Value {
	return Value{doc: m.doc, start: m.valStart, end: m.valEnd, plain: m.valPlain}
}

// Err returns nil if the walk ended at the object's closing brace, and an
// error if the value was not an object or its bytes were not well formed.
func (m *Members) Err() error { return m.err }

// Items walks the items of an array, as Members walks an object. It
// allocates nothing.
type Items struct {
	doc        []byte // the document, cut at the end of the array
	pos        int    // where the next item (or its comma) is looked for; -1 when done
	start, end int    // the current item, as an extent of doc
	plain      bool   // whether it is a string seen to be plain
	err        error
}

// Next moves to the next item and reports whether there is one.
func (it *Items) Next() bool {
	if it.pos < 0 {
		return false
	}
	d := it.doc
	i := skipSpace(d, it.pos)
	if i >= len(d) {
		return it.fail()
	}
	switch d[i] {
	case ']':
		it.pos = -1
		return false
	case ',':
		i = skipSpace(d, i+1)
	}
	end, plain := skipValue(d, i)
	if end <= i {
		return it.fail()
	}
	it.start, it.end, it.plain, it.pos = i, end, plain, end
	return true
}

func (it *Items) fail() bool {
	it.pos, it.err = -1, errUnchecked
	return false
}

// Value returns the current item.
func (it *Items) Value() Value {
	return Value{doc: it.doc, start: it.start, end: it.end, plain: it.plain}
}

// Err returns nil if the walk ended at the array's closing bracket, and an
// error if the value was not an array or its bytes were not well formed.
func (it *Items) Err() error { return it.err }

func isSpace(ch byte) bool { return ch <= ' ' && (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') }

func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string that opens at d[i], or -1
// if there is none, and whether the string is plain: ASCII without
// escapes. It scans a short string, a key or the common value, and so
// learns whether it is plain on the way; past maxLook bytes it gives up
// learning and jumps to the end.
func skipString(d []byte, i int) (int, bool) {
	if i >= len(d) || d[i] != '"' {
		return -1, false
	}
	look := d[:min(len(d), i+1+maxLook)]
	j := stringRun(look, i+1, true)
	if j < len(look) && d[j] == '"' {
		return j + 1, true
	}
	return jumpString(d, i, j), false
}

// maxLook is how many bytes of a string skipString scans.
const maxLook = 64

// jumpString returns the index after the string that opens at d[i], or -1,
// jumping from quote to quote from d[from] on (no quote before it may end
// the string): the first quote after an even run of backslashes is the
// end. A long string costs a few vector instructions rather than a look at
// each byte.
func jumpString(d []byte, i, from int) int {
	for j := from; ; {
		k := bytes.IndexByte(d[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0
		for p := q - 1; p > i && d[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// skipValue returns the index after the value that starts at d[i]
// (-1 if the bytes end first, i if there is no value there) and, for a
// string, whether skipString saw it to be plain. It keeps a count, not a
// stack, so nesting costs nothing.
func skipValue(d []byte, i int) (int, bool) {
	if i >= len(d) {
		return -1, false
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				if i = jumpString(d, i, i+1); i < 0 {
					return -1, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, false
				}
			}
			i++
		}
		return -1, false
	}
	// A number or a literal runs to the next delimiter or space.
	for i < len(d) {
		switch d[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i, false
		}
		i++
	}
	return i, false
}
