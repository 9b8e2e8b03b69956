package notify

import "strings"

// The escapes a terminal emulator turns into a desktop notification.
const (
	// osc9 is iTerm2's, also read by kitty, WezTerm, Ghostty and others:
	// ESC ] 9 ; text BEL.
	osc9 = "9"
	// osc777 is urxvt's, also read by VTE terminals (GNOME Terminal,
	// Tilix, …), foot, WezTerm and Ghostty: ESC ] 777 ; notify ; title ;
	// body BEL.
	osc777 = "777"
	// oscNone writes the bell alone.
	oscNone = "none"
)

// OSCEnv names the environment variable that chooses the escape: 9, 777
// or none; unset, the terminal's environment chooses.
const OSCEnv = "COURIER_NOTIFY_OSC"

// TerminalAlert is what the prompt writes to its terminal to tell of a
// batch, in the same write as a frame (never in the middle of one): the
// bell, which every terminal and tmux pass on to the operator (tmux marks
// the window, and rings the outer terminal), and a desktop notification
// escape, OSC 9 or OSC 777 (see osc9, osc777): 777 where the environment
// names a terminal known to read it (VTE_VERSION set, TERM foot or rxvt),
// else 9; COURIER_NOTIFY_OSC overrides the choice. Inside tmux (TMUX set)
// the escape is wrapped in tmux's passthrough, which tmux hands on to the
// outer terminal when its allow-passthrough option is on and drops
// otherwise. On a console that would print an unknown escape as text
// (TERM linux, dumb or unset) only the bell is written.
//
// The batch's text has been cleaned (Ask): it holds no control character,
// so nothing in it can end the escape or start another.
func TerminalAlert(b Batch, getenv func(string) string) string {
	const bell = "\a"
	kind := getenv(OSCEnv)
	if kind != osc9 && kind != osc777 && kind != oscNone {
		kind = chooseOSC(getenv)
	}
	text := clean(b.Text(), capSummary+40)
	var osc string
	switch kind {
	case osc9:
		osc = "\x1b]9;courier: " + text + bell
	case osc777:
		title := "courier: a permission ask"
		if b.Count > 1 {
			title = "courier: permission asks"
		}
		// The fields are separated by ';': none in the body.
		osc = "\x1b]777;notify;" + title + ";" + strings.ReplaceAll(text, ";", ",") + bell
	default:
		return bell
	}
	if getenv("TMUX") != "" {
		osc = "\x1bPtmux;" + strings.ReplaceAll(osc, "\x1b", "\x1b\x1b") + "\x1b\\"
	}
	return bell + osc
}

// chooseOSC picks the escape the terminal most likely reads, none on a
// console that would print it.
func chooseOSC(getenv func(string) string) string {
	term := getenv("TERM")
	switch {
	case term == "" || term == "dumb" || strings.HasPrefix(term, "linux") || strings.HasPrefix(term, "vt"):
		return oscNone
	case getenv("VTE_VERSION") != "" || strings.HasPrefix(term, "foot") || strings.HasPrefix(term, "rxvt"):
		return osc777
	}
	return osc9
}
