package intent

import (
	"bytes"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// The few ways the decoders look into a line: a member by its exact name,
// a string, a boolean. Each line has passed strictjson.Check, so no two
// members of an object fold equal and a name finds at most one member; a
// value of another kind than expected reads as absent, never as an error,
// so an unknown shape contributes nothing rather than stopping the read.

// get returns the member of object v called name, or the zero Value (of
// strictjson.KindInvalid) when v is not an object or has no such member.
func get(v strictjson.Value, name string) strictjson.Value {
	m := v.Members()
	for m.Next() {
		if bytes.Equal(m.Key().Text(), []byte(name)) {
			return m.Value()
		}
	}
	return strictjson.Value{}
}

// text returns the text of v when it is a string, and "" otherwise.
func text(v strictjson.Value) string {
	if v.Kind() != strictjson.KindString {
		return ""
	}
	return string(v.Text())
}

// str is text(get(v, name)).
func str(v strictjson.Value, name string) string { return text(get(v, name)) }

// isTrue reports whether member name of v is the literal true.
func isTrue(v strictjson.Value, name string) bool {
	return get(v, name).Kind() == strictjson.KindTrue
}

// items calls fn for each item of v when v is an array.
func items(v strictjson.Value, fn func(strictjson.Value)) {
	it := v.Items()
	for it.Next() {
		fn(it.Value())
	}
}

// parseLine checks one line as a JSON document and returns its root
// object; ok is false for a line that is not one well-formed object with
// distinct keys (strictjson.Check: a line that says "type" twice is read
// by nobody, rather than by one reader one way and another the other).
func parseLine(line []byte) (strictjson.Value, bool) {
	if strictjson.KindOf(line) != strictjson.KindObject || strictjson.Check(line) != nil {
		return strictjson.Value{}, false
	}
	return strictjson.Root(line), true
}
