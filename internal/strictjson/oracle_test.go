package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// checkOracle is the implementation Check replaced, walking the document
// with encoding/json's Decoder.Token. It is kept as the oracle the new
// scanner must agree with, error text included (FuzzCheckAgreesWithOracle).
func checkOracle(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkValueOracle(dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON value", ErrInvalid)
	}
	return nil
}

func walkValueOracle(dec *json.Decoder, depth int) error {
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
			if err := walkValueOracle(dec, depth+1); err != nil {
				return err
			}
		}
	case '[':
		for dec.More() {
			if err := walkValueOracle(dec, depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}
