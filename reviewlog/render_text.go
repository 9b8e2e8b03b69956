package reviewlog

import (
	"bytes"
	"slices"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// text transcodes the JSON a MarshalJSON method returned into what the
// generic path makes of it: members sorted by key, masked and capped,
// numbers kept as written, insignificant space dropped.
//
// The text must be one well-formed JSON value (strictjson.Valid); the walk
// over it then declines only what it cannot reproduce exactly: an escaped
// key, a repeated key, a string encoding/json would decode with a
// substitution.
func (r *renderer) text(src []byte, depth int) bool {
	if !strictjson.Valid(src) {
		return false
	}
	return r.textValue(strictjson.Root(src), depth)
}

func (r *renderer) textValue(v strictjson.Value, depth int) bool {
	if depth > maxFastDepth {
		return false
	}
	switch v.Kind() {
	case strictjson.KindObject:
		return r.textObject(v, depth)
	case strictjson.KindArray:
		r.buf = append(r.buf, '[')
		items := v.Items()
		for n := 0; items.Next(); n++ {
			if n > 0 {
				r.buf = append(r.buf, ',')
			}
			if !r.textValue(items.Value(), depth+1) {
				return false
			}
		}
		r.buf = append(r.buf, ']')
	case strictjson.KindString:
		raw := v.Raw()
		if v.Plain() {
			r.buf = appendCapped(r.buf, raw[1:len(raw)-1], r.width)
			break
		}
		// Invalid UTF-8 and surrogate escapes decode to U+FFFD or to a
		// rune two escapes make; leave them to the generic path.
		s, whole := strictjson.AppendUnquote(r.unq[:0], raw)
		r.unq = s[:0]
		if !whole {
			return false
		}
		r.buf = appendCapped(r.buf, s, r.width)
	default:
		// A number as written (the generic path decodes with UseNumber
		// and encodes the literal back verbatim), or true, false, null.
		r.buf = append(r.buf, v.Raw()...)
	}
	return true
}

// textObject writes an object's members in key order, as decoding it into
// a map and encoding that again sorts them, masking the values under
// sensitive keys.
func (r *renderer) textObject(v strictjson.Value, depth int) bool {
	base := len(r.members)
	defer func() { r.members = r.members[:base] }()
	src, at := v.Raw(), v.Offset()
	members := v.Members()
	for members.Next() {
		// Keys must be plain: an escaped key would have to be decoded
		// before it can be sorted and judged.
		key, value := members.Key(), members.Value()
		if !key.Plain() {
			return false
		}
		k0, v0 := key.Offset()-at, value.Offset()-at
		r.members = append(r.members, member{k0: k0 + 1, k1: k0 + len(key.Raw()) - 1, v0: v0, v1: v0 + len(value.Raw())})
	}
	ms := r.members[base:]
	slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(src[a.k0:a.k1], src[b.k0:b.k1]) })
	for i := 1; i < len(ms); i++ {
		// A decoded map keeps only the last of a repeated key; rare
		// enough not to reproduce.
		if bytes.Equal(src[ms[i-1].k0:ms[i-1].k1], src[ms[i].k0:ms[i].k1]) {
			return false
		}
	}
	r.buf = append(r.buf, '{')
	for i := base; i < len(r.members); i++ {
		// Index afresh: nested objects may have grown the stack.
		m := r.members[i]
		key := src[m.k0:m.k1]
		if i > base {
			r.buf = append(r.buf, ',')
		}
		r.buf = appendString(r.buf, key)
		r.buf = append(r.buf, ':')
		start := len(r.buf)
		if !r.textValue(strictjson.Root(src[m.v0:m.v1]), depth+1) {
			return false
		}
		if string(r.buf[start:]) != "null" && isSensitiveKeyBytes(key) {
			r.buf = append(r.buf[:start], r.redacted...)
		}
	}
	r.buf = append(r.buf, '}')
	return true
}
