package reviewlog

import (
	"bytes"
	"cmp"
	"math"
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
		return r.textString(v.Raw(), v.Plain())
	default:
		// A number as written (the generic path decodes with UseNumber
		// and encodes the literal back verbatim), or true, false, null.
		r.buf = append(r.buf, v.Raw()...)
	}
	return true
}

// textString writes the string raw as the generic path writes it: decoded,
// capped and encoded again. plain says that its text is its bytes as they
// stand (strictjson.Plain).
func (r *renderer) textString(raw []byte, plain bool) bool {
	if plain {
		r.buf = appendCapped(r.buf, raw[1:len(raw)-1], r.width)
		return true
	}
	// Invalid UTF-8 and surrogate escapes decode to U+FFFD or to a rune
	// two escapes make; leave them to the generic path.
	s, whole := strictjson.AppendUnquote(r.unq[:0], raw)
	r.unq = s[:0]
	if !whole {
		return false
	}
	r.buf = appendCapped(r.buf, s, r.width)
	return true
}

// textObject writes an object's members in key order, as decoding it into
// a map and encoding that again sorts them, masking the values under
// sensitive keys.
func (r *renderer) textObject(v strictjson.Value, depth int) bool {
	src, at := v.Raw(), v.Offset()
	if len(src) > math.MaxInt32 {
		return false // past what a member's offsets hold
	}
	base := len(r.members)
	defer func() { r.members = r.members[:base] }()
	members := v.Members()
	for members.Next() {
		// Keys must be plain: an escaped key would have to be decoded
		// before it can be sorted and judged.
		key, value := members.Key(), members.Value()
		if !key.Plain() {
			return false
		}
		k, val := key.Offset()-at+1, value.Offset()-at
		kn := len(key.Raw()) - 2
		kind := value.Kind()
		r.members = append(r.members, member{
			prefix: keyPrefix(src, k, kn),
			k0:     int32(k), k1: int32(k + kn),
			v0: int32(val), v1: int32(val + len(value.Raw())),
			kind: kind, plain: kind == strictjson.KindString && value.Plain(),
			verbatim: value.Verbatim(), keyVerbatim: key.Verbatim(),
		})
	}
	ms := r.members[base:]
	slices.SortFunc(ms, func(a, b member) int {
		if a.prefix != b.prefix {
			return cmp.Compare(a.prefix, b.prefix)
		}
		return bytes.Compare(src[a.k0:a.k1], src[b.k0:b.k1])
	})
	for i := 1; i < len(ms); i++ {
		// A decoded map keeps only the last of a repeated key; rare
		// enough not to reproduce.
		if ms[i-1].prefix == ms[i].prefix && bytes.Equal(src[ms[i-1].k0:ms[i-1].k1], src[ms[i].k0:ms[i].k1]) {
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
		if m.keyVerbatim {
			r.buf = append(r.buf, src[m.k0-1:m.k1+1]...) // as strictjson.AppendString would write it
		} else {
			r.buf = strictjson.AppendString(r.buf, key)
		}
		r.buf = append(r.buf, ':')
		start := len(r.buf)
		switch raw := src[m.v0:m.v1]; {
		case m.verbatim && len(raw)-2 <= r.width:
			r.buf = append(r.buf, raw...) // as appendCapped would write it
		case m.kind == strictjson.KindString:
			if !r.textString(raw, m.plain) {
				return false
			}
		case m.kind == strictjson.KindObject || m.kind == strictjson.KindArray:
			if !r.textValue(strictjson.Root(raw), depth+1) {
				return false
			}
		default:
			r.buf = append(r.buf, raw...) // as textValue writes a scalar
		}
		if string(r.buf[start:]) != "null" && isSensitiveKeyBytes(key) {
			r.buf = append(r.buf[:start], r.redacted...)
		}
	}
	r.buf = append(r.buf, '}')
	return true
}

// keyPrefix returns the first eight bytes of the n-byte key at s[k] as a
// big-endian number, zero-padded. The padding never reverses an order, so
// keys whose prefixes differ order as their prefixes do, and only keys
// with equal prefixes need their bytes compared.
func keyPrefix[S string | []byte](s S, k, n int) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < n {
			p |= uint64(s[k+i])
		}
	}
	return p
}
