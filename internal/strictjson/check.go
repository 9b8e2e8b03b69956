package strictjson

import (
	"errors"
	"fmt"
	"strconv"
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
	// keys holds the keys of every open object in linear mode (see
	// check); its first maxLinearKeys entries stay on the stack.
	var keys [maxLinearKeys]keyRef
	c := checker{data: data}
	return c.check(keys[:0])
}

// Valid reports whether data is exactly one well-formed JSON value nested
// at most MaxNesting deep: Check without the comparison of keys, for a
// reader that needs only well-formed text and judges repeated keys itself
// (reviewlog's transcoding of what a MarshalJSON method returns).
func Valid(data []byte) bool {
	c := checker{data: data, syntaxOnly: true}
	return c.check(nil) == nil
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

	// syntaxOnly skips the comparison of keys, for Valid.
	syntaxOnly bool
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
//
// keys holds the keys of every open object in linear mode, outermost
// first; a nested object's keys are dropped when it closes, so each
// object's keys are a contiguous run at the end while it is read. It is
// the caller's empty slice, not a field of c, so that its first entries
// stay on the caller's stack.
func (c *checker) check(keys []keyRef) error {
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
				if c.syntaxOnly {
					_, _, err = c.str()
				} else {
					keys, err = c.key(keys, depth-1)
				}
				if err != nil {
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
		// The common bytes first, eight at a time; once a non-ASCII
		// byte has been seen, further ones need no look either.
		i = stringRun(d, i, !high)
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
