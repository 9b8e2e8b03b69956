package prompt

import (
	"fmt"
	"strings"
)

// screen draws the prompt's frame on the bottom lines of a terminal and
// leaves the lines above it to everything else that writes there.
//
// The broker's diagnostics (and anything a plugin or the Go runtime
// prints) go to stderr, which is usually this same terminal, and nothing
// can route them through the prompt. So the frame lives below a scrolling
// region (DECSTBM, as apt's progress bar does): the terminal's cursor is
// always parked in that region, a line written to stderr scrolls only the
// region, and the frame is never touched. Each draw is one write, which
// the tty layer keeps whole against other writers, and it saves and
// restores the cursor (DECSC/DECRC) around its own moves, so stderr text
// continues exactly where it was.
//
// Every sequence used is plain VT100/xterm, which tmux, screen, ssh
// terminals and the Linux console all understand.
type screen struct {
	// height is the number of lines the frame occupies (0: none yet).
	height int
	// cols and rows are the terminal's size at the last draw.
	cols, rows int
	// last is the last frame drawn, to skip redrawing an unchanged one;
	// lines are its lines, to redraw only those that changed (the time
	// left ticks once a second: one line).
	last  string
	lines []line
}

// draw returns the bytes that show lines as the frame at the bottom of a
// terminal of the given size; "" when nothing changed. A frame of the
// same height on a terminal of the same size rewrites only the lines that
// changed. The caller keeps len(lines) <= rows-2 so that the scrolling
// region has two lines at least.
func (s *screen) draw(lines []line, cols, rows int) string {
	var body strings.Builder
	for _, l := range lines {
		body.WriteString(l.sgr + l.text + sgrReset + "\n")
	}
	resized := cols != s.cols || rows != s.rows
	if !resized && body.String() == s.last {
		return ""
	}
	s.last = body.String()
	h := len(lines)
	same := !resized && h == s.height && len(s.lines) == h
	var b strings.Builder
	b.WriteString("\x1b[?25l") // the cursor is parked above the frame: hide it
	if resized && s.height > 0 {
		// A terminal resets its scrolling region when it is resized; the
		// old frame is below the cursor, so clear from there down.
		b.WriteString("\x1b7\x1b[r\x1b8\x1b[J")
		s.height = 0
	}
	if h > s.height {
		// Make room: newlines at the cursor scroll the region's content up
		// (or move down over blank lines), then go back up to the same line.
		b.WriteString(strings.Repeat("\n", h-s.height))
		fmt.Fprintf(&b, "\x1b[%dA", h-s.height)
	}
	b.WriteString("\x1b7") // save where stderr text continues
	if h != s.height || resized {
		fmt.Fprintf(&b, "\x1b[1;%dr", rows-h)
	}
	b.WriteString("\x1b[?7l") // no autowrap: a misjudged width cuts, never breaks the layout
	for r := rows - s.height + 1; r <= rows-h; r++ {
		// Lines a taller frame used, now part of the region again.
		fmt.Fprintf(&b, "\x1b[%d;1H\x1b[2K", r)
	}
	for i, l := range lines {
		if same && s.lines[i] == l {
			continue
		}
		fmt.Fprintf(&b, "\x1b[%d;1H\x1b[2K%s%s%s", rows-h+1+i, l.sgr, l.text, sgrReset)
	}
	b.WriteString("\x1b[?7h\x1b8")
	s.height, s.cols, s.rows = h, cols, rows
	s.lines = append(s.lines[:0], lines...)
	return b.String()
}

// invalidate forgets what the terminal shows (a write failed): the next
// draw draws the whole frame.
func (s *screen) invalidate() {
	s.last, s.lines = "", nil
}

// clear returns the bytes that remove the frame and give the whole
// terminal back: scrolling region reset, frame erased, cursor shown.
func (s *screen) clear() string {
	if s.height == 0 {
		return ""
	}
	s.height = 0
	s.invalidate()
	return "\x1b7\x1b[r\x1b8\x1b[J\x1b[?7h\x1b[?25h"
}
