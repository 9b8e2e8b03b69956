package serve

import (
	"strings"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/bashunits"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// askedOf is what req asked, for the review entries that record a
// decision on it or its escalation (issue 16: the log named who decided,
// never what). The surface and, on bash, the units are what the rules
// judged: the access facts' (their match values split as the rules split
// them), else the display surface and value, which is what a pi 20.x
// child's request holds. The value is what the operator is shown: the
// display value, else the first match value. All of it is the child's
// text; the review log escapes and caps it.
func askedOf(req *wire.Request) reviewlog.Asked {
	a := reviewlog.Asked{Surface: req.Surface, Value: req.Value}
	lines := []string{req.Value}
	if ai := req.AccessIntent; ai != nil {
		a.Surface, a.Cwd = ai.Surface, ai.RequesterCwd
		if len(ai.MatchValues) > 0 {
			lines = ai.MatchValues
			if a.Value == "" {
				a.Value = ai.MatchValues[0]
			}
		}
	}
	if a.Surface != "bash" {
		return a
	}
	for _, line := range lines {
		if line == "" {
			continue
		}
		for _, u := range bashunits.Split(line) {
			a.Units = append(a.Units, u.Command)
		}
	}
	return a
}

// Bounds on what a request kept for its answer (compact) holds of what
// was asked: a backlog of rule-resolved asks is not bounded in number
// (docs/decisions/0014-fair-share-and-bounds.md), so each keeps a few KiB
// however large its request. 4 KiB is the default field width of the
// review log (1000 runes) at its widest in bytes; a string cut here ends
// in "…", as one the log cuts does.
const (
	askedKeepBytes  = 4 << 10
	askedKeepValues = 16
)

// keptAsked is what compact keeps of req for askedOf: the display value,
// and of the access facts the surface, the match values and the cwd, each
// string cut to askedKeepBytes and at most askedKeepValues match values.
// The kept facts serve the review entry only: nothing judges by them.
func keptAsked(req *wire.Request) (value string, ai *wire.AccessIntent) {
	value = keepCut(req.Value)
	if req.AccessIntent == nil {
		return value, nil
	}
	src := req.AccessIntent
	ai = &wire.AccessIntent{Surface: keepCut(src.Surface), RequesterCwd: keepCut(src.RequesterCwd)}
	for i, v := range src.MatchValues {
		if i == askedKeepValues {
			break
		}
		ai.MatchValues = append(ai.MatchValues, keepCut(v))
	}
	return value, ai
}

// keepCut is s cut to askedKeepBytes on a rune boundary, ending in "…"
// when cut. The result does not share s's memory when cut, so the
// request's megabyte is not kept alive by its prefix.
func keepCut(s string) string {
	if len(s) <= askedKeepBytes {
		return s
	}
	n := askedKeepBytes - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n]) + "…"
}
