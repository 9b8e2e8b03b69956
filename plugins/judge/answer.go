package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/internal/strictjson"
)

// MaxAnswerBytes bounds the model's answer: a verdict, a code and a
// reason of a few sentences. A longer answer is malformed, whatever it
// holds.
const MaxAnswerBytes = 4 << 10

// errMalformed is wrapped by every error parseAnswer returns.
var errMalformed = errors.New("malformed verdict")

// answer is the model's verdict as it wrote it.
type answer struct {
	Kind   authorizer.VerdictKind
	Reason string
	// Code is the model's code when it is a valid one, else "".
	Code string
}

// parseAnswer reads the model's answer strictly: one JSON object, space
// around it allowed, nothing else (no code fence, no prose); only the
// keys "verdict", "reason" and "code", each once, spelled exactly so;
// verdict and reason required, every value a string; verdict one of
// "allow", "deny", "defer". A model that cannot keep to the format is not
// trusted with what it meant: the judge defers.
//
// A code that is not lower_snake_case of at most 40 bytes is dropped, not
// refused: it only names why, and refusing it would turn a model's deny
// into a defer over a spelling.
func parseAnswer(text string) (answer, error) {
	var a answer
	if len(text) > MaxAnswerBytes {
		return a, fmt.Errorf("%w: %d bytes, more than %d", errMalformed, len(text), MaxAnswerBytes)
	}
	doc := strings.Trim(text, " \t\r\n")
	if !strings.HasPrefix(doc, "{") {
		return a, fmt.Errorf("%w: not a JSON object", errMalformed)
	}
	// Check refuses repeated keys, and keys that differ only in case,
	// which encoding/json would read as one.
	if err := strictjson.Check([]byte(doc)); err != nil {
		return a, fmt.Errorf("%w: %w", errMalformed, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &fields); err != nil {
		return a, fmt.Errorf("%w: %w", errMalformed, err)
	}
	str := func(key string, required bool) (string, error) {
		raw, ok := fields[key]
		if !ok {
			if required {
				return "", fmt.Errorf("%w: %q missing", errMalformed, key)
			}
			return "", nil
		}
		delete(fields, key)
		var s string
		if len(raw) == 0 || raw[0] != '"' {
			return "", fmt.Errorf("%w: %q: want a string", errMalformed, key)
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("%w: %q: %w", errMalformed, key, err)
		}
		return s, nil
	}
	verdict, err := str("verdict", true)
	if err != nil {
		return a, err
	}
	if a.Reason, err = str("reason", true); err != nil {
		return a, err
	}
	code, err := str("code", false)
	if err != nil {
		return a, err
	}
	for key := range fields {
		return a, fmt.Errorf("%w: unknown key %q", errMalformed, cutBytes(key, 40))
	}
	switch verdict {
	case "allow":
		a.Kind = authorizer.Allow
	case "deny":
		a.Kind = authorizer.Deny
	case "defer":
		a.Kind = authorizer.Defer
	default:
		return a, fmt.Errorf("%w: verdict %q, want \"allow\", \"deny\" or \"defer\"", errMalformed, cutBytes(verdict, 40))
	}
	a.Code = authorizer.CleanCode(code)
	return a, nil
}
