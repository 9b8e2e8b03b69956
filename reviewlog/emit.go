package reviewlog

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// Entry is one review entry: a value of one of this package's *Entry
// types, one type per event (the event names are in events.go). Only this
// package's types implement it, so an entry's keys are the fields of its
// type: a key cannot be misspelt, and a missing one is a missing field.
type Entry interface {
	// Event is the entry's event name, one of the constants in events.go.
	Event() string
	// appendDetails writes the entry's details, in key order.
	appendDetails(d details)
}

// Emit appends one entry. Like [Log.Write], it returns an error only when
// the line did not reach the file whole, and a nil *Log discards the entry.
//
// The line is the one Write writes for a map of the same details: the
// same keys in the same order, the same values, the same cap, the same
// placeholder for what cannot be encoded. Only the work differs. An entry's
// keys are fixed and none is sensitive ([IsSensitiveKey];
// TestEntryKeysAreNotSensitive holds every key to it), so none is looked
// up; its strings are escaped and cut to the field width; and only its
// free-form value, decidedBy, takes the renderer, where the keys nested in
// it are masked as Write masks them.
func (l *Log) Emit(e Entry) error {
	if l == nil {
		return nil
	}
	if e == nil {
		return errors.New("reviewlog: nil entry")
	}
	r := getRenderer(l.width, l.redacted)
	defer putRenderer(r)
	e.appendDetails(details{r})
	return l.writeLine(e.Event(), r)
}

// details appends an entry's details to a renderer, one key and value per
// call, in the order of the calls. An entry calls them in key order: the
// byte order of the key names, which is the order Write sorts a map's
// details into (entries_test.go compares every entry with its map).
type details struct{ r *renderer }

// done records the detail key whose value was appended from start on.
func (d details) done(key string, start int) {
	d.r.fields = append(d.r.fields, fieldSpan{key: key, start: start, end: len(d.r.buf)})
}

// str appends a string, escaped and cut to the field width. A string that
// is not valid UTF-8 takes the generic path, where encoding/json replaces
// each invalid byte before the cap counts runes.
func (d details) str(key, s string) {
	start := len(d.r.buf)
	if utf8.ValidString(s) {
		d.r.buf = appendCapped(d.r.buf, s, d.r.width)
	} else {
		d.r.buf = append(d.r.buf, renderGeneric(key, s, d.r.width)...)
	}
	d.done(key, start)
}

// strIfSet appends a string that is not empty, and nothing otherwise: the
// key of a fact that some entries of an event carry and others do not.
func (d details) strIfSet(key, s string) {
	if s != "" {
		d.str(key, s)
	}
}

// strOrNull appends a string, or null when it is empty.
func (d details) strOrNull(key, s string) {
	if s == "" {
		d.null(key)
		return
	}
	d.str(key, s)
}

// strPtr appends *s, and nothing for a nil s.
func (d details) strPtr(key string, s *string) {
	if s != nil {
		d.str(key, *s)
	}
}

// errText appends an error's message as a string, and nothing for a nil
// error.
func (d details) errText(key string, err error) {
	if err != nil {
		d.str(key, err.Error())
	}
}

func (d details) null(key string) {
	start := len(d.r.buf)
	d.r.buf = append(d.r.buf, "null"...)
	d.done(key, start)
}

func (d details) boolean(key string, b bool) {
	start := len(d.r.buf)
	if b {
		d.r.buf = append(d.r.buf, "true"...)
	} else {
		d.r.buf = append(d.r.buf, "false"...)
	}
	d.done(key, start)
}

func (d details) integer(key string, n int) {
	start := len(d.r.buf)
	d.r.buf = strconv.AppendInt(d.r.buf, int64(n), 10)
	d.done(key, start)
}

// float appends f as encoding/json writes it; NaN and the infinities,
// which JSON cannot hold, as the generic path's placeholder.
func (d details) float(key string, f float64) {
	start := len(d.r.buf)
	if !d.r.float(f, 64) {
		d.r.buf = append(d.r.buf[:start], renderGeneric(key, f, d.r.width)...)
	}
	d.done(key, start)
}

// strs appends a list of strings; a nil list is null, as encoding/json
// writes it.
func (d details) strs(key string, ss []string) {
	if ss == nil {
		d.null(key)
		return
	}
	start := len(d.r.buf)
	d.r.buf = append(d.r.buf, '[')
	for i, s := range ss {
		if !utf8.ValidString(s) {
			d.r.buf = append(d.r.buf[:start], renderGeneric(key, ss, d.r.width)...)
			d.done(key, start)
			return
		}
		if i > 0 {
			d.r.buf = append(d.r.buf, ',')
		}
		d.r.buf = appendCapped(d.r.buf, s, d.r.width)
	}
	d.r.buf = append(d.r.buf, ']')
	d.done(key, start)
}

// decidedBy appends the provenance union (a provenance.Source, whose
// MarshalJSON writes pi's shape); nil is null. Its nested strings are free
// form, so it takes the renderer, which sorts, masks and caps what the
// method wrote, or else the generic path.
func (d details) decidedBy(by json.Marshaler) {
	start := len(d.r.buf)
	if by == nil {
		d.r.buf = append(d.r.buf, "null"...)
	} else if !d.render(by) {
		d.r.buf = append(d.r.buf[:start], renderGeneric(KeyDecidedBy, by, d.r.width)...)
	}
	d.done(KeyDecidedBy, start)
}

// render appends v through the renderer. A MarshalJSON method that panics
// declines too: the generic path then calls it again and logs the panic
// as its placeholder.
func (d details) render(v any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return d.r.value(v, 0)
}

// grants appends a list of session grants; a nil list is null.
func (d details) grants(key string, gs []SessionGrant) {
	if gs == nil {
		d.null(key)
		return
	}
	start := len(d.r.buf)
	d.r.buf = append(d.r.buf, '[')
	for i, g := range gs {
		if !utf8.ValidString(g.Pattern) || !utf8.ValidString(g.Surface) {
			d.r.buf = append(d.r.buf[:start], renderGeneric(key, gs, d.r.width)...)
			d.done(key, start)
			return
		}
		if i > 0 {
			d.r.buf = append(d.r.buf, ',')
		}
		d.r.buf = append(d.r.buf, `{"pattern":`...)
		d.r.buf = appendCapped(d.r.buf, g.Pattern, d.r.width)
		d.r.buf = append(d.r.buf, `,"surface":`...)
		d.r.buf = appendCapped(d.r.buf, g.Surface, d.r.width)
		d.r.buf = append(d.r.buf, '}')
	}
	d.r.buf = append(d.r.buf, ']')
	d.done(key, start)
}
