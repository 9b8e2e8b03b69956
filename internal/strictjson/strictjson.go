// Package strictjson rejects JSON documents that Go's encoding/json would
// read ambiguously or expensively, before they are decoded.
//
// encoding/json matches object keys case-insensitively and lets the last
// duplicate win, so `{"state":"denied","STATE":"approved"}` decodes as
// approved. A JavaScript reader (pi's) sees the first key exactly. Every
// document courier reads from the mailbox or a review log passes [Check]
// first, so both readers agree on what a file says, or the file is refused.
package strictjson

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every error Check returns.
var ErrInvalid = errors.New("invalid JSON document")

// MaxNesting bounds how deep a document may nest. pi's deepest shape (a
// payload, or decidedBy forwarded four times) stays under 16; the bound
// keeps a depth bomb from costing more than a linear scan.
const MaxNesting = 64

// Check reports an error wrapping ErrInvalid if data is not exactly one
// well-formed JSON value, nests deeper than MaxNesting, or has an object
// with two keys that are equal ignoring letter case (in any nested object).
//
// Keys are compared as encoding/json decodes them (escapes resolved,
// invalid UTF-8 and lone surrogates read as U+FFFD) under Unicode simple
// case folding, as FoldKey does. The text of a syntax error is the one
// encoding/json's Decoder.Token reports for the same input.
//
// Check runs on every mailbox file, on the broker's hot path, so it is one
// pass over the bytes that allocates only to build an error, or when the
// objects open at one point hold more than maxLinearKeys keys between them.
func Check(data []byte) error {
	c := checker{data: data}
	return c.check()
}

// maxLinearKeys is how many keys an object holds before its duplicate check
// moves from comparing against every earlier key (no allocation, fine for
// the dozen members of a real document) to a map (linear time for a
// hostile object with a hundred thousand keys).
const maxLinearKeys = 32

// checker is the state of one Check: a position in data and a stack of the
// open containers.
type checker struct {
	data []byte
	pos  int

	// kinds[i] is '[' or '{' for the container open at depth i; for an
	// object, bases[i] is the index in check's keys of its first key, or
	// -1 once its keys have moved to the last entry of big.
	kinds [MaxNesting]byte
	bases [MaxNesting]int

	// big holds, innermost last, a map for each open object with more
	// than maxLinearKeys keys: FoldKey of each decoded key to that key.
	big []map[string]string
}

// keyRef is a key in data, between its quotes.
type keyRef struct {
	start, end int
	// hash is of the key's folded runes, so most comparisons are one
	// integer compare.
	hash uint32
	// simple keys are ASCII without escapes: folding is upper-casing.
	simple bool
}

// The states of check: what the next significant byte may be.
const (
	stValue       = iota // a value
	stArrayFirst         // after '[': a value or ']'
	stObjectFirst        // after '{': a key or '}'
	stObjectKey          // after ',' in an object: a key
	stColon              // after a key: ':'
	stAfterValue         // after a value: ',' or the closer, or the end
)

// check walks data once. Each state and each error mirrors what
// encoding/json's Decoder.Token (the implementation this replaced) reports
// at the same byte, so the error text is unchanged: "EOF" where a token is
// missing, "unexpected EOF" inside a truncated scalar, "invalid character
// … <context>" otherwise.
func (c *checker) check() error {
	// keys holds the keys of every open object in linear mode, outermost
	// first; a nested object's keys are dropped when it closes, so each
	// object's keys are a contiguous run at the end while it is read. It
	// is a local, not a field of c, so that its first maxLinearKeys
	// entries stay on the stack.
	var buf [maxLinearKeys]keyRef
	keys := buf[:0]
	depth := 0
	state := stValue
	for {
		switch state {
		case stValue:
			ch, ok := c.peek()
			if !ok {
				return errEOF()
			}
			switch ch {
			case '[', '{':
				c.pos++
				if depth >= MaxNesting {
					return fmt.Errorf("%w: nested deeper than %d levels", ErrInvalid, MaxNesting)
				}
				c.kinds[depth] = ch
				state = stArrayFirst
				if ch == '{' {
					c.bases[depth] = len(keys)
					state = stObjectFirst
				}
				depth++
				continue
			case ']', '}', ':', ',':
				return tokenError(ch, " looking for beginning of value")
			}
			if err := c.scalar(ch); err != nil {
				return err
			}
			state = stAfterValue

		case stArrayFirst:
			ch, ok := c.peek()
			if !ok {
				return errEOF()
			}
			if ch == ']' {
				c.pos++
				depth--
				state = stAfterValue
				continue
			}
			state = stValue

		case stObjectFirst, stObjectKey:
			ch, ok := c.peek()
			if !ok {
				return errEOF()
			}
			if ch == '"' {
				var err error
				if keys, err = c.key(keys, depth-1); err != nil {
					return err
				}
				state = stColon
				continue
			}
			if state == stObjectKey {
				return tokenError(ch, " looking for beginning of object key string")
			}
			if ch == '}' {
				c.pos++
				depth--
				keys = c.closeObject(keys, depth)
				state = stAfterValue
				continue
			}
			// Decoder.Token gives no context right after '{'.
			return tokenError(ch, "")

		case stColon:
			ch, ok := c.peek()
			if !ok {
				return errEOF()
			}
			if ch != ':' {
				return tokenError(ch, " after object key")
			}
			c.pos++
			state = stValue

		case stAfterValue:
			if depth == 0 {
				if _, ok := c.peek(); ok {
					return fmt.Errorf("%w: data after the JSON value", ErrInvalid)
				}
				return nil
			}
			ch, ok := c.peek()
			if !ok {
				return errEOF()
			}
			if c.kinds[depth-1] == '[' {
				switch ch {
				case ',':
					c.pos++
					state = stValue
				case ']':
					c.pos++
					depth--
				default:
					return tokenError(ch, " after array element")
				}
				continue
			}
			switch ch {
			case ',':
				c.pos++
				state = stObjectKey
			case '}':
				c.pos++
				depth--
				keys = c.closeObject(keys, depth)
			default:
				return tokenError(ch, " after object key:value pair")
			}
		}
	}
}

// peek skips JSON whitespace and returns the next byte, false at the end.
func (c *checker) peek() (byte, bool) {
	for ; c.pos < len(c.data); c.pos++ {
		switch ch := c.data[c.pos]; ch {
		case ' ', '\t', '\n', '\r':
		default:
			return ch, true
		}
	}
	return 0, false
}

// scalar reads a string, number or literal starting with ch at c.pos. As
// in encoding/json's scanner, a scalar ends at the first byte that cannot
// continue it; that byte is judged by the caller's state.
func (c *checker) scalar(ch byte) error {
	switch {
	case ch == '"':
		_, _, err := c.str()
		return err
	case ch == '-' || ('0' <= ch && ch <= '9'):
		return c.number()
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	}
	return syntaxError(ch, "looking for beginning of value")
}

func (c *checker) literal(word string) error {
	for i := 1; i < len(word); i++ {
		p := c.pos + i
		if p >= len(c.data) {
			return errUnexpectedEOF()
		}
		if c.data[p] != word[i] {
			return syntaxError(c.data[p], "in literal "+word+" (expecting "+quoteChar(word[i])+")")
		}
	}
	c.pos += len(word)
	return nil
}

func (c *checker) number() error {
	d, i := c.data, c.pos
	if d[i] == '-' {
		i++
		if i >= len(d) {
			return errUnexpectedEOF()
		}
		if !isDigit(d[i]) {
			return syntaxError(d[i], "in numeric literal")
		}
	}
	if d[i] == '0' {
		i++
	} else {
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) {
			return errUnexpectedEOF()
		}
		if !isDigit(d[i]) {
			return syntaxError(d[i], "after decimal point in numeric literal")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) {
			return errUnexpectedEOF()
		}
		if !isDigit(d[i]) {
			return syntaxError(d[i], "in exponent of numeric literal")
		}
		for i < len(d) && isDigit(d[i]) {
			i++
		}
	}
	c.pos = i
	return nil
}

func isDigit(ch byte) bool { return '0' <= ch && ch <= '9' }

// str reads the string whose opening quote is at c.pos and reports
// whether it holds an escape or a non-ASCII byte, which decide how a key
// is compared.
func (c *checker) str() (escaped, high bool, err error) {
	d, i := c.data, c.pos+1
	for {
		// The common bytes first, without the switch.
		for i < len(d) && d[i] >= 0x20 && d[i] < utf8.RuneSelf && d[i] != '"' && d[i] != '\\' {
			i++
		}
		if i >= len(d) {
			return false, false, errUnexpectedEOF()
		}
		switch ch := d[i]; {
		case ch == '"':
			c.pos = i + 1
			return escaped, high, nil
		case ch == '\\':
			escaped = true
			i++
			if i >= len(d) {
				return false, false, errUnexpectedEOF()
			}
			switch d[i] {
			case 'b', 'f', 'n', 'r', 't', '\\', '/', '"':
				i++
			case 'u':
				i++
				for range 4 {
					if i >= len(d) {
						return false, false, errUnexpectedEOF()
					}
					if hexValue(d[i]) < 0 {
						return false, false, syntaxError(d[i], `in \u hexadecimal character escape`)
					}
					i++
				}
			default:
				return false, false, syntaxError(d[i], "in string escape code")
			}
		case ch < 0x20:
			return false, false, syntaxError(ch, "in string literal")
		default:
			high = true
			i++
		}
	}
}

func hexValue(ch byte) rune {
	switch {
	case '0' <= ch && ch <= '9':
		return rune(ch - '0')
	case 'a' <= ch && ch <= 'f':
		return rune(ch - 'a' + 10)
	case 'A' <= ch && ch <= 'F':
		return rune(ch - 'A' + 10)
	}
	return -1
}

// key reads the key at c.pos of the object open at depth, refuses it if it
// folds equal to an earlier key of that object, and returns keys with it
// added. Like Decoder.Token, it judges the key before looking for the
// colon after it.
func (c *checker) key(keys []keyRef, depth int) ([]keyRef, error) {
	start := c.pos + 1
	escaped, high, err := c.str()
	if err != nil {
		return keys, err
	}
	k := keyRef{start: start, end: c.pos - 1, simple: !escaped && !high}
	raw := c.data[k.start:k.end]

	base := c.bases[depth]
	if base < 0 {
		return keys, c.bigKey(c.big[len(c.big)-1], raw)
	}
	if k.simple {
		k.hash = hashSimple(raw)
	} else {
		k.hash = hashFolded(raw)
	}
	for _, prev := range keys[base:] {
		if prev.hash == k.hash && c.sameKey(prev, k) {
			return keys, duplicate(decodeKey(raw), decodeKey(c.data[prev.start:prev.end]))
		}
	}
	keys = append(keys, k)
	if len(keys)-base > maxLinearKeys {
		// Too many to compare pairwise: move this object's keys to a map.
		seen := make(map[string]string, 2*maxLinearKeys)
		for _, prev := range keys[base:] {
			s := decodeKey(c.data[prev.start:prev.end])
			seen[FoldKey(s)] = s
		}
		keys = keys[:base]
		c.bases[depth] = -1
		c.big = append(c.big, seen)
	}
	return keys, nil
}

func (c *checker) bigKey(seen map[string]string, raw []byte) error {
	s := decodeKey(raw)
	folded := FoldKey(s)
	if prev, dup := seen[folded]; dup {
		return duplicate(s, prev)
	}
	seen[folded] = s
	return nil
}

// closeObject forgets the keys of the object that was open at depth.
func (c *checker) closeObject(keys []keyRef, depth int) []keyRef {
	if base := c.bases[depth]; base >= 0 {
		return keys[:base]
	}
	c.big[len(c.big)-1] = nil
	c.big = c.big[:len(c.big)-1]
	return keys
}

// sameKey reports whether two keys with equal hashes fold equal.
func (c *checker) sameKey(a, b keyRef) bool {
	x, y := c.data[a.start:a.end], c.data[b.start:b.end]
	if a.simple && b.simple {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if upperASCII(x[i]) != upperASCII(y[i]) {
				return false
			}
		}
		return true
	}
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		var r1, r2 rune
		r1, i = nextRune(x, i)
		r2, j = nextRune(y, j)
		if foldRune(r1) != foldRune(r2) {
			return false
		}
	}
	return i == len(x) && j == len(y)
}

// FNV-1a over folded runes; hashSimple and hashFolded agree on every key
// both can read.
const (
	hashOffset = 2166136261
	hashPrime  = 16777619
)

func hashSimple(raw []byte) uint32 {
	h := uint32(hashOffset)
	for _, ch := range raw {
		h = (h ^ uint32(upperASCII(ch))) * hashPrime
	}
	return h
}

func hashFolded(raw []byte) uint32 {
	h := uint32(hashOffset)
	for i := 0; i < len(raw); {
		var r rune
		r, i = nextRune(raw, i)
		h = (h ^ uint32(foldRune(r))) * hashPrime
	}
	return h
}

func upperASCII(ch byte) byte {
	if 'a' <= ch && ch <= 'z' {
		return ch - ('a' - 'A')
	}
	return ch
}

// nextRune decodes the rune of a checked JSON string's content at raw[i]
// exactly as encoding/json unquotes it: escapes resolved, a surrogate
// pair joined, a lone surrogate or an invalid UTF-8 byte read as U+FFFD.
func nextRune(raw []byte, i int) (rune, int) {
	ch := raw[i]
	if ch < utf8.RuneSelf {
		if ch != '\\' {
			return rune(ch), i + 1
		}
		switch raw[i+1] {
		case 'b':
			return '\b', i + 2
		case 'f':
			return '\f', i + 2
		case 'n':
			return '\n', i + 2
		case 'r':
			return '\r', i + 2
		case 't':
			return '\t', i + 2
		case 'u':
			r := hex4(raw[i+2:])
			i += 6
			if !utf16.IsSurrogate(r) {
				return r, i
			}
			if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				if dec := utf16.DecodeRune(r, hex4(raw[i+2:])); dec != unicode.ReplacementChar {
					return dec, i + 6
				}
			}
			return unicode.ReplacementChar, i
		}
		return rune(raw[i+1]), i + 2 // \" \\ \/
	}
	r, size := utf8.DecodeRune(raw[i:])
	return r, i + size
}

func hex4(b []byte) rune {
	var r rune
	for _, ch := range b[:4] {
		v := hexValue(ch)
		if v < 0 {
			return -1
		}
		r = r*16 + v
	}
	return r
}

// decodeKey returns a checked key's text, as encoding/json would.
func decodeKey(raw []byte) string {
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); {
		var r rune
		r, i = nextRune(raw, i)
		b.WriteRune(r)
	}
	return b.String()
}

// foldRune maps r to the smallest rune of its simple-fold orbit, as FoldKey
// does rune by rune.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		return rune(upperASCII(byte(r)))
	}
	low := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < low {
			low = f
		}
	}
	return low
}

// FoldKey maps every rune to the smallest rune of its Unicode simple-fold
// orbit, so two keys fold equal exactly when strings.EqualFold (and
// encoding/json's key matching) treats them as equal.
func FoldKey(s string) string {
	simple := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf || ('a' <= s[i] && s[i] <= 'z') {
			simple = false
			break
		}
	}
	if simple {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// The errors below carry encoding/json's wording, which Check returned
// before it had its own scanner; logs and golden files quote it.

func errEOF() error           { return fmt.Errorf("%w: EOF", ErrInvalid) }
func errUnexpectedEOF() error { return fmt.Errorf("%w: unexpected EOF", ErrInvalid) }

// tokenError is Decoder.Token's complaint about a misplaced byte; context
// starts with a space, or is empty.
func tokenError(ch byte, context string) error {
	return fmt.Errorf("%w: invalid character %s%s", ErrInvalid, quoteChar(ch), context)
}

// syntaxError is the scanner's complaint about a byte inside a scalar.
func syntaxError(ch byte, context string) error {
	return fmt.Errorf("%w: invalid character %s %s", ErrInvalid, quoteChar(ch), context)
}

func duplicate(key, prev string) error {
	return fmt.Errorf("%w: duplicate key %q (also %q)", ErrInvalid, key, prev)
}

// quoteChar formats a byte as encoding/json's errors do: the byte read as
// a rune (so 0xff shows as 'ÿ'), quoted with single quotes.
func quoteChar(ch byte) string {
	switch ch {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(ch)))
	return "'" + s[1:len(s)-1] + "'"
}
