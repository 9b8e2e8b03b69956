package mailbox

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

// object is a decoded JSON object whose members are looked up by their
// exact, case-sensitive name, the way pi's JavaScript readers see them.
type object map[string]json.RawMessage

// parseObject checks data strictly and returns its top-level object.
func parseObject(data []byte) (object, error) {
	if err := strictjson.Check(data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return asObject(data)
}

func asObject(raw json.RawMessage) (object, error) {
	if kindOf(raw) != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	var o object
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return o, nil
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
	raw, ok := o[field]
	if !ok {
		return "", &FieldError{Field: path, Reason: "missing, expected a string"}
	}
	return rawString(raw, path)
}

func rawString(raw json.RawMessage, path string) (string, *FieldError) {
	if kindOf(raw) != '"' {
		return "", &FieldError{Field: path, Reason: "expected a string, got " + describe(raw)}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", &FieldError{Field: path, Reason: "expected a string: " + err.Error()}
	}
	return s, nil
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
	raw, ok := o[field]
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
