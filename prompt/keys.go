package prompt

import "unicode/utf8"

// keyCode says which key was pressed; keyRune carries the character.
type keyCode int

// The keys the prompt understands. Everything else is dropped.
const (
	keyRune keyCode = iota
	keyEnter
	keyEsc
	keyUp
	keyDown
	keyBackspace
	// keyKillLine is Ctrl-U: clear the typed text.
	keyKillLine
	// keyPageUp and keyPageDown scroll the units of a long command line.
	keyPageUp
	keyPageDown
)

// key is one key press.
type key struct {
	Code keyCode
	// Rune is the character of a keyRune press.
	Rune rune
}

// char is a keyRune press of r.
func char(r rune) key { return key{Code: keyRune, Rune: r} }

// decoder turns the bytes a terminal sends into key presses. Terminals
// send arrow keys as escape sequences (ESC [ A, or ESC O A in application
// cursor mode) and a lone ESC for the Escape key; over ssh or through tmux
// a sequence may arrive split across reads, so an ESC at the end of the
// input is held until more bytes come or the caller gives up waiting
// (flush), which is how every terminal program tells the two apart.
type decoder struct {
	pending []byte
}

// feed decodes b after whatever was held back. It returns the complete
// keys and whether some input is held back waiting for more (an ESC that
// may start a sequence, or a split UTF-8 character).
func (d *decoder) feed(b []byte) (keys []key, held bool) {
	buf := append(d.pending, b...)
	d.pending = nil
	for len(buf) > 0 {
		c := buf[0]
		switch {
		case c == 0x1b:
			k, n, complete := decodeEscape(buf)
			if !complete {
				d.pending = append([]byte(nil), buf...)
				return keys, true
			}
			if k != nil {
				keys = append(keys, *k)
			}
			buf = buf[n:]
			continue
		case c == '\r' || c == '\n':
			keys = append(keys, key{Code: keyEnter})
		case c == 0x7f || c == 0x08:
			keys = append(keys, key{Code: keyBackspace})
		case c == 0x15:
			keys = append(keys, key{Code: keyKillLine})
		case c < 0x20:
			// Other control keys mean nothing here.
		case c < utf8.RuneSelf:
			keys = append(keys, char(rune(c)))
		default:
			if !utf8.FullRune(buf) {
				d.pending = append([]byte(nil), buf...)
				return keys, true
			}
			r, size := utf8.DecodeRune(buf)
			if r != utf8.RuneError {
				keys = append(keys, char(r))
			}
			buf = buf[size:]
			continue
		}
		buf = buf[1:]
	}
	return keys, false
}

// flush gives up waiting for the rest of held input: a held ESC is the
// Escape key, anything else held is dropped.
func (d *decoder) flush() []key {
	held := d.pending
	d.pending = nil
	if len(held) > 0 && held[0] == 0x1b {
		return []key{{Code: keyEsc}}
	}
	return nil
}

// decodeEscape reads the escape sequence at the start of buf (buf[0] is
// ESC). It returns the key (nil for a sequence the prompt ignores, such as
// a function key), the bytes consumed, and false when buf ends before the
// sequence does.
func decodeEscape(buf []byte) (*key, int, bool) {
	if len(buf) == 1 {
		return nil, 0, false
	}
	switch buf[1] {
	case '[':
		// CSI: parameter and intermediate bytes, then a final byte.
		for i := 2; i < len(buf); i++ {
			c := buf[i]
			if c >= 0x40 && c <= 0x7e {
				switch {
				case i == 2:
					return arrow(c), i + 1, true
				case c == '~':
					return editKey(string(buf[2:i])), i + 1, true
				}
				return nil, i + 1, true
			}
			if c < 0x20 || c > 0x3f {
				// Not a CSI after all: the ESC stands alone.
				return &key{Code: keyEsc}, 1, true
			}
		}
		return nil, 0, false
	case 'O':
		// SS3: application cursor keys.
		if len(buf) == 2 {
			return nil, 0, false
		}
		return arrow(buf[2]), 3, true
	}
	// ESC followed by another key (Alt+key, or Escape then a key typed
	// quickly): the ESC stands alone and the key follows.
	return &key{Code: keyEsc}, 1, true
}

// editKey reads the parameter of a CSI ~ sequence (the editing keypad):
// 5 is Page Up, 6 Page Down; the rest are ignored.
func editKey(param string) *key {
	switch param {
	case "5":
		return &key{Code: keyPageUp}
	case "6":
		return &key{Code: keyPageDown}
	}
	return nil
}

func arrow(final byte) *key {
	switch final {
	case 'A':
		return &key{Code: keyUp}
	case 'B':
		return &key{Code: keyDown}
	}
	return nil
}
