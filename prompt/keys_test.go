package prompt

import (
	"reflect"
	"testing"
)

func TestDecoder(t *testing.T) {
	tests := []struct {
		name  string
		feeds []string // fed in turn
		flush bool     // then the ESC wait runs out
		want  []key
	}{
		{"letters", []string{"ysnr"}, false, runes("ysnr")},
		{"enter as CR or LF", []string{"\r\n"}, false, []key{enter, enter}},
		{"arrows (CSI)", []string{"\x1b[A\x1b[B"}, false, []key{up, down}},
		{"arrows (SS3, application cursor mode)", []string{"\x1bOA\x1bOB"}, false, []key{up, down}},
		{"an arrow split across reads", []string{"\x1b", "[", "B"}, false, []key{down}},
		{"a lone ESC is Escape once the wait runs out", []string{"\x1b"}, true, []key{esc}},
		{"ESC then a key", []string{"\x1b\r"}, false, []key{esc, enter}},
		{"ESC then y", []string{"\x1by"}, false, []key{esc, char('y')}},
		{"other sequences are dropped", []string{"\x1b[1;5C\x1b[3~\x1bOP", "y"}, false, runes("y")},
		{"page up and down", []string{"\x1b[5~\x1b[6", "~"}, false, []key{pgUp, pgDown}},
		{"a cut CSI is Escape", []string{"\x1b[1;"}, true, []key{esc}},
		{"backspace, DEL and Ctrl-U", []string{"\x7f\x08\x15"}, false, []key{bs, bs, kill}},
		{"other controls are dropped", []string{"\x00\x01\x03\x04\t\x07y"}, false, runes("y")},
		{"UTF-8 split across reads", []string{"\xc3", "\xa9"}, false, []key{char('é')}},
		{"invalid UTF-8 is dropped", []string{"\xff\xfey"}, false, runes("y")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d decoder
			var got []key
			for i, f := range tt.feeds {
				keys, held := d.feed([]byte(f))
				got = append(got, keys...)
				if last := i == len(tt.feeds)-1; last && held != tt.flush {
					t.Fatalf("held = %v after the last feed, want %v", held, tt.flush)
				}
			}
			if tt.flush {
				got = append(got, d.flush()...)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
