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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
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
func Check(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkValue(dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON value", ErrInvalid)
	}
	return nil
}

func walkValue(dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth >= MaxNesting {
		return fmt.Errorf("%w: nested deeper than %d levels", ErrInvalid, MaxNesting)
	}
	switch delim {
	case '{':
		seen := make(map[string]string)
		for dec.More() {
			keyTok, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			key, _ := keyTok.(string)
			folded := FoldKey(key)
			if prev, dup := seen[folded]; dup {
				return fmt.Errorf("%w: duplicate key %q (also %q)", ErrInvalid, key, prev)
			}
			seen[folded] = key
			if err := walkValue(dec, depth+1); err != nil {
				return err
			}
		}
	case '[':
		for dec.More() {
			if err := walkValue(dec, depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
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
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < low {
				low = f
			}
		}
		b.WriteRune(low)
	}
	return b.String()
}
