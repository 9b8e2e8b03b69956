package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

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

// asObject splits an object of a checked document into its members with
// strictjson's walker. The values are the exact bytes encoding/json would
// give a json.RawMessage, without copying: the document was checked, so a
// value's extent is found by skipping, not parsing, and nothing needs to
// be decoded twice.
func asObject(raw json.RawMessage) (object, error) {
	v := strictjson.Root(raw)
	if v.Kind() != strictjson.KindObject {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	o := make(object, 0, 8)
	m := v.Members()
	for m.Next() {
		o = append(o, member{name: m.Key().Text(), value: m.Value().Raw()})
	}
	if m.Err() != nil {
		return nil, errUnchecked
	}
	return o, nil
}

// arrayItems splits an array of a checked document into its items, as
// asObject splits an object. It reports false if raw is not an array.
func arrayItems(raw json.RawMessage) ([]json.RawMessage, bool) {
	v := strictjson.Root(raw)
	if v.Kind() != strictjson.KindArray {
		return nil, false
	}
	var items []json.RawMessage
	it := v.Items()
	for it.Next() {
		items = append(items, it.Value().Raw())
	}
	if it.Err() != nil {
		return nil, false
	}
	return items, true
}

// errUnchecked reports a document that cannot have passed strictjson.Check:
// asObject was handed bytes that did not come from parseObject.
var errUnchecked = fmt.Errorf("%w: not a checked JSON document", ErrMalformed)

// kindOf returns the kind of a JSON value: its first significant byte for
// an object '{', an array '[', a string '"', null 'n' and the booleans 't'
// and 'f'; '0' for any number.
func kindOf(raw json.RawMessage) strictjson.Kind { return strictjson.KindOf(raw) }

func isNull(raw json.RawMessage) bool { return kindOf(raw) == strictjson.KindNull }

// str reads a member that must be a JSON string.
func (o object) str(field, path string) (string, *FieldError) {
	raw, ok := o.get(field)
	if !ok {
		return "", &FieldError{Field: path, Reason: "missing, expected a string"}
	}
	return rawString(raw, path)
}

func rawString(raw json.RawMessage, path string) (string, *FieldError) {
	if kindOf(raw) != strictjson.KindString {
		return "", &FieldError{Field: path, Reason: "expected a string, got " + describe(raw)}
	}
	return string(strictjson.Unquote(raw)), nil
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
	if kindOf(raw) != strictjson.KindNumber {
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
func describe(raw json.RawMessage) string { return kindOf(raw).Noun() }

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
