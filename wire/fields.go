package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// ErrMalformed is wrapped by every error that rejects a mailbox file's
// content, so a caller can tell bad input from an I/O failure.
var ErrMalformed = errors.New("malformed mailbox file")

// FieldError names the field of a mailbox file that was missing or
// malformed and what was expected of it. A required field's FieldError
// rejects the file; an optional field's FieldError is reported as dropped.
type FieldError struct {
	// Field is the JSON path of the field, e.g. "accessIntent.matchValues[1]".
	Field string
	// Reason says what was wrong and what was expected.
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %s", e.Field, e.Reason) }

// Unwrap makes every FieldError match ErrMalformed.
func (e *FieldError) Unwrap() error { return ErrMalformed }

// at sets the path of a FieldError that was made without one. The
// readers of array items pass an empty path and name the item only when
// it is wrong, so a valid file costs no path strings.
func (e *FieldError) at(path string) *FieldError {
	e.Field = path
	return e
}

// itemPath is the JSON path of item i of the array at path.
func itemPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// object is a JSON object whose members are looked up by their exact,
// case-sensitive name, the way pi's JavaScript readers see them. Its names
// and values are slices of the document it was split from, which has
// passed strictjson.Check: every value is well-formed and no two names
// fold equal, so at most one member has a given name.
type object []member

type member struct {
	// name is the member's decoded name. It is a slice of the document
	// unless it holds an escape or invalid UTF-8, and then a decoded copy.
	name  []byte
	value json.RawMessage
}

// get returns the value of the member called field.
func (o object) get(field string) (json.RawMessage, bool) {
	for _, m := range o {
		if string(m.name) == field {
			return m.value, true
		}
	}
	return nil, false
}

// has reports whether o has a member called field.
func (o object) has(field string) bool {
	_, ok := o.get(field)
	return ok
}

// parseObject checks data strictly and returns its top-level object.
func parseObject(data []byte) (object, error) {
	if err := strictjson.Check(data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return asObject(data)
}

// asObject splits an object of a checked document into its members. The
// values are the exact bytes encoding/json would give a json.RawMessage,
// without copying: the document was checked, so a value's extent is found
// by skipping, not parsing, and nothing needs to be decoded twice.
func asObject(raw json.RawMessage) (object, error) {
	if kindOf(raw) != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	i := skipSpace(raw, 0) + 1
	o := make(object, 0, 8)
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return nil, errUnchecked
		}
		if raw[i] == '}' {
			return o, nil
		}
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
		nameEnd, escaped := skipString(raw, i)
		if nameEnd < 0 {
			return nil, errUnchecked
		}
		name := raw[i+1 : nameEnd-1]
		if escaped || !utf8.Valid(name) {
			// encoding/json resolves escapes and reads bad UTF-8 as U+FFFD.
			var s string
			if err := json.Unmarshal(raw[i:nameEnd], &s); err != nil {
				return nil, errUnchecked
			}
			name = []byte(s)
		}
		i = skipSpace(raw, nameEnd)
		if i >= len(raw) || raw[i] != ':' {
			return nil, errUnchecked
		}
		start := skipSpace(raw, i+1)
		end := skipValue(raw, start)
		if end <= start {
			return nil, errUnchecked
		}
		o = append(o, member{name: name, value: raw[start:end:end]})
		i = end
	}
}

// arrayItems splits an array of a checked document into its items, as
// asObject splits an object. It reports false if raw is not an array.
func arrayItems(raw json.RawMessage) ([]json.RawMessage, bool) {
	if kindOf(raw) != '[' {
		return nil, false
	}
	i := skipSpace(raw, 0) + 1
	var items []json.RawMessage
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case ']':
			return items, true
		case ',':
			i = skipSpace(raw, i+1)
		}
		end := skipValue(raw, i)
		if end <= i {
			return nil, false
		}
		items = append(items, raw[i:end:end])
		i = end
	}
}

// errUnchecked reports a document that cannot have passed strictjson.Check:
// asObject was handed bytes that did not come from parseObject.
var errUnchecked = fmt.Errorf("%w: not a checked JSON document", ErrMalformed)

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that opens at raw[i], and
// whether it holds an escape; -1 if there is no string there.
func skipString(raw []byte, i int) (int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return -1, false
	}
	escaped := false
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			return i + 1, escaped
		case '\\':
			escaped = true
			i++
		}
	}
	return -1, false
}

// skipValue returns the index after the checked value that starts at
// raw[i]: -1 if the bytes end first, i if there is no value there.
func skipValue(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		end, _ := skipString(raw, i)
		return end
	case '{', '[':
		depth := 0
		for i < len(raw) {
			switch raw[i] {
			case '"':
				if i, _ = skipString(raw, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	// A number or a literal runs to the next delimiter or space.
	for i < len(raw) {
		switch raw[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// kindOf returns the first significant byte of a JSON value: '{', '[',
// '"', 'n' (null), 't'/'f' (booleans), or a digit/'-' for numbers.
func kindOf(raw json.RawMessage) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

func isNull(raw json.RawMessage) bool { return kindOf(raw) == 'n' }

// str reads a member that must be a JSON string.
func (o object) str(field, path string) (string, *FieldError) {
	raw, ok := o.get(field)
	if !ok {
		return "", &FieldError{Field: path, Reason: "missing, expected a string"}
	}
	return rawString(raw, path)
}

func rawString(raw json.RawMessage, path string) (string, *FieldError) {
	if kindOf(raw) != '"' {
		return "", &FieldError{Field: path, Reason: "expected a string, got " + describe(raw)}
	}
	if s, ok := plainString(raw); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", &FieldError{Field: path, Reason: "expected a string: " + err.Error()}
	}
	return s, nil
}

// plainString decodes the common JSON string that decodes to its own bytes:
// no escape, no control byte, valid UTF-8. It reports false for any other
// string, which json.Unmarshal then decodes.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	ascii := true
	for _, c := range body {
		if c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(body) {
		return "", false // encoding/json reads each bad byte as U+FFFD
	}
	return string(body), true
}

// nonEmptyStr reads a member that must be a string with something other
// than whitespace in it.
func (o object) nonEmptyStr(field, path string) (string, *FieldError) {
	s, ferr := o.str(field, path)
	if ferr != nil {
		return "", ferr
	}
	if strings.TrimSpace(s) == "" {
		return "", &FieldError{Field: path, Reason: "empty, expected a non-empty string"}
	}
	return s, nil
}

// millis reads a member that must be a finite JSON number, as pi's
// Date.now() timestamps are. A fractional value is truncated.
func (o object) millis(field, path string) (int64, *FieldError) {
	raw, ok := o.get(field)
	if !ok {
		return 0, &FieldError{Field: path, Reason: "missing, expected a number (ms since the epoch)"}
	}
	return rawMillis(raw, path)
}

func rawMillis(raw json.RawMessage, path string) (int64, *FieldError) {
	c := kindOf(raw)
	if c != '-' && (c < '0' || c > '9') {
		return 0, &FieldError{Field: path, Reason: "expected a number, got " + describe(raw)}
	}
	if n, ok := smallInt(raw); ok {
		return n, nil
	}
	text := strings.TrimSpace(string(raw))
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) >= math.MaxInt64 {
		return 0, &FieldError{Field: path, Reason: "expected a finite number in the int64 range, got " + text}
	}
	return int64(f), nil
}

// smallInt parses the common number, an integer of at most 18 digits,
// without the string conversion strconv needs; it reports false for any
// other text, which then takes the general path with the same result.
func smallInt(raw json.RawMessage) (int64, bool) {
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if raw[0] == '-' {
		n = -n
	}
	return n, true
}

// describe names a JSON value's type for an error message.
func describe(raw json.RawMessage) string {
	switch c := kindOf(raw); {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 'n':
		return "null"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == '-' || ('0' <= c && c <= '9'):
		return "a number"
	}
	return "nothing"
}

// isIntegral reports whether a JSON number has no fractional part or
// exponent that makes it one, e.g. 42 or 4.2e1 but not 4.5.
func isIntegral(raw json.RawMessage) bool {
	if _, ok := smallInt(raw); ok {
		return true
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
	return err == nil && f == math.Trunc(f)
}

// encodeCompact writes v as JSON.stringify would: compact, no trailing
// newline, and <, > and & left as they are.
func encodeCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
