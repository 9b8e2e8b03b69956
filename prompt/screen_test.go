package prompt

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// vt is just enough of a VT100 to check what screen draws: printing,
// CR/LF (with the tty's newline translation), cursor moves, erase, the
// scrolling region, save and restore of the cursor, and autowrap.
type vt struct {
	w, h     int
	cells    [][]rune
	row, col int
	top, bot int
	saved    [2]int
	noWrap   bool
	// bells counts BEL outside a string sequence; strings are the OSC
	// and DCS sequences written (their text, ESC ] or ESC P included).
	bells   int
	strings []string
}

func newVT(w, h int) *vt {
	v := &vt{w: w, h: h, bot: h - 1}
	for range h {
		v.cells = append(v.cells, []rune(strings.Repeat(" ", w)))
	}
	return v
}

func (v *vt) lineFeed() {
	if v.row == v.bot {
		copy(v.cells[v.top:v.bot], v.cells[v.top+1:v.bot+1])
		v.cells[v.bot] = []rune(strings.Repeat(" ", v.w))
		return
	}
	if v.row < v.h-1 {
		v.row++
	}
}

func (v *vt) write(s string) {
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == '\n':
			v.col = 0 // ONLCR
			v.lineFeed()
		case r == '\r':
			v.col = 0
		case r == '\a':
			v.bells++
		case r == 0x1b && i+1 < len(rs) && (rs[i+1] == ']' || rs[i+1] == 'P'):
			// A string sequence: to BEL, or to ST (ESC \) for both; a
			// doubled ESC inside tmux's passthrough is part of it.
			j := i + 2
			for j < len(rs) {
				if rs[i+1] == ']' && rs[j] == '\a' {
					break
				}
				if rs[j] == 0x1b && j+1 < len(rs) && rs[j+1] == 0x1b {
					j += 2
					continue
				}
				if rs[j] == 0x1b && j+1 < len(rs) && rs[j+1] == '\\' {
					j++
					break
				}
				j++
			}
			v.strings = append(v.strings, string(rs[i:min(j+1, len(rs))]))
			i = j
		case r == 0x1b && i+1 < len(rs) && rs[i+1] == '7':
			v.saved = [2]int{v.row, v.col}
			i++
		case r == 0x1b && i+1 < len(rs) && rs[i+1] == '8':
			v.row, v.col = v.saved[0], v.saved[1]
			i++
		case r == 0x1b && i+1 < len(rs) && rs[i+1] == '[':
			j := i + 2
			for j < len(rs) && (rs[j] < 0x40 || rs[j] > 0x7e) {
				j++
			}
			v.csi(string(rs[i+2:j]), rs[j])
			i = j
		default:
			if v.col >= v.w {
				if v.noWrap {
					v.col = v.w - 1
				} else {
					v.col = 0
					v.lineFeed()
				}
			}
			v.cells[v.row][v.col] = r
			v.col++
		}
	}
}

func (v *vt) csi(params string, final rune) {
	var n []int
	for _, p := range strings.Split(strings.TrimPrefix(params, "?"), ";") {
		x, _ := strconv.Atoi(p)
		n = append(n, x)
	}
	arg := func(i, def int) int {
		if i < len(n) && n[i] > 0 {
			return n[i]
		}
		return def
	}
	switch final {
	case 'A':
		v.row = max(v.row-arg(0, 1), 0)
	case 'H':
		v.row, v.col = arg(0, 1)-1, arg(1, 1)-1
	case 'K':
		v.cells[v.row] = []rune(strings.Repeat(" ", v.w))
	case 'J':
		for c := v.col; c < v.w; c++ {
			v.cells[v.row][c] = ' '
		}
		for r := v.row + 1; r < v.h; r++ {
			v.cells[r] = []rune(strings.Repeat(" ", v.w))
		}
	case 'r':
		v.top, v.bot = arg(0, 1)-1, arg(1, v.h)-1
		v.row, v.col = 0, 0
	case 'h', 'l':
		if strings.HasPrefix(params, "?7") {
			v.noWrap = final == 'l'
		}
	}
}

func (v *vt) line(r int) string { return strings.TrimRight(string(v.cells[r]), " ") }

func textFrame(texts ...string) []line {
	var ls []line
	for _, t := range texts {
		ls = append(ls, line{text: t, sgr: sgrBold})
	}
	return ls
}

// TestScreenKeepsStderrAbove draws frames of changing height while other
// writers print lines to the same terminal, as the broker's diagnostics
// do, and checks that the frame is always intact on the bottom lines and
// the other text scrolls above it, in order and unbroken.
func TestScreenKeepsStderrAbove(t *testing.T) {
	const w, h = 40, 12
	term := newVT(w, h)
	term.write("$ broker serve --terminal tty\n")
	var s screen
	logged := 0
	log := func(n int) {
		for range n {
			logged++
			term.write(fmt.Sprintf("broker: diagnostic %d\n", logged))
		}
	}
	check := func(frame []line) {
		t.Helper()
		for i, l := range frame {
			if got := term.line(h - len(frame) + i); got != l.text {
				t.Fatalf("frame line %d = %q, want %q\nscreen:\n%s", i, got, l.text, term.dump())
			}
		}
		// The lines just above the frame are the newest diagnostics, in
		// order, and nothing of an older frame is left between them.
		above := h - len(frame) - 1
		for above >= 0 && term.line(above) == "" {
			above--
		}
		if logged > 0 && term.line(above) != fmt.Sprintf("broker: diagnostic %d", logged) {
			t.Fatalf("the line above the frame is %q, want diagnostic %d\nscreen:\n%s", term.line(above), logged, term.dump())
		}
	}

	idle := textFrame("── idle ──")
	term.write(s.draw(idle, w, h))
	check(idle)
	log(3)
	check(idle)

	ask := textFrame("── ask ──", "  command  git push", "", "  [y] Yes, once", "  [n] No")
	term.write(s.draw(ask, w, h))
	check(ask)
	log(20) // more than the region holds: it scrolls, the frame stays
	check(ask)
	if out := s.draw(ask, w, h); out != "" {
		t.Errorf("an unchanged frame was drawn again: %q", out)
	}

	taller := textFrame("── ask ──", "  command  git push", "  evidence x", "", "  [y] Yes, once", "  [n] No", "  keys")
	term.write(s.draw(taller, w, h))
	check(taller)
	log(2)
	check(taller)

	term.write(s.draw(idle, w, h))
	check(idle)
	log(1)
	check(idle)

	// A frame line wider than the terminal is cut, never wrapped.
	wide := textFrame(strings.Repeat("x", w+10), "second")
	term.write(s.draw(wide, w, h))
	if term.line(h-2) != strings.Repeat("x", w) || term.line(h-1) != "second" {
		t.Fatalf("a wide line broke the frame:\n%s", term.dump())
	}

	term.write(s.clear())
	if term.top != 0 || term.bot != h-1 {
		t.Errorf("the scrolling region was not reset: %d..%d", term.top, term.bot)
	}
	for r := h - 2; r < h; r++ {
		if term.line(r) != "" {
			t.Errorf("line %d still shows %q after clear", r, term.line(r))
		}
	}
	if s.clear() != "" {
		t.Error("a second clear wrote something")
	}
}

func (v *vt) dump() string {
	var b strings.Builder
	for r := range v.h {
		fmt.Fprintf(&b, "%2d|%s|\n", r, string(v.cells[r]))
	}
	return b.String()
}
