package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/provenance"
)

// Report is the census of one review log. Its JSON form (WriteJSON) is the
// stable interface for scripts: fields keep their names and meaning while
// Version stays the same.
type Report struct {
	// Version is ReportVersion.
	Version int `json:"version"`
	// Deciders has one row per effective decider, in a fixed order: user,
	// authorizers by name, rule, session_approval, yolo,
	// infrastructure_read, unavailable, gate_error, any kind this build does
	// not know, then none. Every fixed kind has a row, zero or not; an
	// authorizer has a row only when it decided something.
	Deciders []Row `json:"deciders"`
	// Forwarded counts the decisions that reached this log through at least
	// one forwarded frame. They are counted in Deciders too.
	Forwarded Counts `json:"forwarded"`
	// Total sums Deciders.
	Total Counts `json:"total"`
	// Lines accounts for every line read.
	Lines Lines `json:"lines"`
	// BadLines lists the first MaxBadLineExamples bad lines; Lines.Bad
	// counts them all.
	BadLines []BadLine `json:"badLines"`
	// UndecodableDecidedBy counts terminal lines whose decidedBy is present
	// but not a valid DecisionSource; their decisions count under none.
	UndecodableDecidedBy int `json:"undecodableDecidedBy"`
	// Files lists the files read, in order (a rotated log first), when
	// the census read files (CensusFile).
	Files []string `json:"files,omitempty"`
	// RotatedAway lists the first MaxBadLineExamples rotation markers
	// whose predecessor the census did not read: lines logged before
	// each one's time are missing. RotatedAwayMore counts the others.
	RotatedAway     []RotatedAway `json:"rotatedAway,omitempty"`
	RotatedAwayMore int           `json:"rotatedAwayMore,omitempty"`
}

// RotatedAway is a rotation marker (reviewlog.LogRotated) that follows a
// file the census did not read.
type RotatedAway struct {
	// Before is the marker's timestamp as the log has it: the history
	// before it was rotated away. Empty when the marker has none.
	Before string `json:"before"`
	// File and Line place the marker; File is empty for one stream.
	File string `json:"file,omitempty"`
	Line int    `json:"line"`
	// PreviousSize is the size in bytes of the file rotated away, as the
	// marker gives it.
	PreviousSize int64 `json:"previousSize"`
}

// Row counts the decisions of one decider.
type Row struct {
	// Decider is a provenance kind ("user", "authorizer", "rule", …) or
	// NoDecider.
	Decider string `json:"decider"`
	// Name is the authorizer link's name; empty for other kinds.
	Name string `json:"name,omitempty"`
	Counts
}

// Counts splits a number of decisions by outcome. Approved + Denied falls
// short of Decisions by the decisions whose lines state no outcome.
type Counts struct {
	Decisions int `json:"decisions"`
	Approved  int `json:"approved"`
	Denied    int `json:"denied"`
}

func (c *Counts) add(o outcome) {
	c.Decisions++
	switch o {
	case outcomeApproved:
		c.Approved++
	case outcomeDenied:
		c.Denied++
	}
}

// Lines accounts for the input: Read = Blank + Bad + Entries, and of the
// entries, Terminal were terminal decision lines, which joining by requestId
// folds into Total.Decisions.
type Lines struct {
	Read     int `json:"read"`
	Blank    int `json:"blank"`
	Bad      int `json:"bad"`
	Entries  int `json:"entries"`
	Terminal int `json:"terminal"`
}

// BadLine says which line was skipped and why.
type BadLine struct {
	// File is the file the line is in, when the census read files
	// (CensusFile); empty for one stream.
	File   string `json:"file,omitempty"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// fixedOrder places the kinds every report lists; authorizers sort by name
// in their slot, unknown kinds after the known ones, none last.
var fixedOrder = []string{
	string(provenance.KindUser),
	string(provenance.KindAuthorizer),
	string(provenance.KindRule),
	string(provenance.KindSessionApproval),
	string(provenance.KindYolo),
	string(provenance.KindInfrastructureRead),
	string(provenance.KindUnavailable),
	string(provenance.KindGateError),
}

func rank(kind string) int {
	for i, k := range fixedOrder {
		if k == kind {
			return i
		}
	}
	if kind == NoDecider {
		return len(fixedOrder) + 1
	}
	return len(fixedOrder)
}

func (c *counter) report() Report {
	rows := map[decider]*Counts{{kind: NoDecider}: {}}
	for _, k := range fixedOrder {
		if k != string(provenance.KindAuthorizer) {
			rows[decider{kind: k}] = &Counts{}
		}
	}
	var forwarded Counts
	count := func(d decision) {
		row := rows[d.decider]
		if row == nil {
			row = &Counts{}
			rows[d.decider] = row
		}
		row.add(d.outcome)
		if d.forwarded {
			forwarded.add(d.outcome)
		}
	}
	for _, a := range c.byID {
		a.each(count)
	}
	for _, d := range c.anonymous {
		count(d)
	}

	r := Report{
		Version:              ReportVersion,
		Deciders:             make([]Row, 0, len(rows)),
		Forwarded:            forwarded,
		Lines:                c.lines,
		BadLines:             append([]BadLine{}, c.badExamples...),
		UndecodableDecidedBy: c.undecodable,
		Files:                c.files,
		RotatedAway:          c.rotated,
		RotatedAwayMore:      c.rotatedMore,
	}
	for d, counts := range rows {
		r.Deciders = append(r.Deciders, Row{Decider: d.kind, Name: d.name, Counts: *counts})
		r.Total.Decisions += counts.Decisions
		r.Total.Approved += counts.Approved
		r.Total.Denied += counts.Denied
	}
	sort.Slice(r.Deciders, func(i, j int) bool {
		a, b := r.Deciders[i], r.Deciders[j]
		if ra, rb := rank(a.Decider), rank(b.Decider); ra != rb {
			return ra < rb
		}
		if a.Decider != b.Decider {
			return a.Decider < b.Decider
		}
		return a.Name < b.Name
	})
	return r
}

// WriteJSON writes the report as indented JSON, for scripts.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("audit: write JSON report: %w", err)
	}
	return nil
}

// maxLabelRunes keeps a long authorizer name from pushing the table's
// numbers off the screen; WriteJSON carries the name whole.
const maxLabelRunes = 48

// label is a row's first column. Authorizer names come from the log, which
// anyone able to write a request can influence, so they are quoted: a name
// holding control characters or escape sequences cannot rewrite the
// operator's terminal.
func (row Row) label() string {
	switch row.Decider {
	case string(provenance.KindAuthorizer):
		name := row.Name
		if utf8.RuneCountInString(name) > maxLabelRunes {
			name = string([]rune(name)[:maxLabelRunes-1]) + "…"
		}
		return "authorizer " + strconv.Quote(name)
	case NoDecider:
		return "no decider recorded"
	case string(provenance.KindSessionApproval):
		return "session approval"
	case string(provenance.KindInfrastructureRead):
		return "infrastructure read"
	case string(provenance.KindGateError):
		return "gate error"
	}
	return row.Decider
}

// timeLabel prints a marker's timestamp: as it is when it is a time, else
// quoted, since the log may hold anything (escape sequences included).
func timeLabel(ts string) string {
	if _, err := time.Parse(time.RFC3339Nano, ts); err == nil {
		return ts
	}
	if ts == "" {
		return "an unknown time"
	}
	if utf8.RuneCountInString(ts) > maxLabelRunes {
		ts = string([]rune(ts)[:maxLabelRunes-1]) + "…"
	}
	return strconv.Quote(ts)
}

// WriteTable writes the report for a person: one row per decider, the
// forwarded and total rows, then where the lines went.
func (r Report) WriteTable(w io.Writer) error {
	type tableRow struct {
		label string
		Counts
	}
	rows := make([]tableRow, 0, len(r.Deciders)+2)
	for _, d := range r.Deciders {
		rows = append(rows, tableRow{d.label(), d.Counts})
	}
	rows = append(rows,
		tableRow{"forwarded (also counted above)", r.Forwarded},
		tableRow{"total", r.Total})

	width := utf8.RuneCountInString("decider")
	for _, row := range rows {
		width = max(width, utf8.RuneCountInString(row.label))
	}
	var b strings.Builder
	pad := func(s string) string { return s + strings.Repeat(" ", width-utf8.RuneCountInString(s)) }
	fmt.Fprintf(&b, "%s  %9s  %8s  %6s\n", pad("decider"), "decisions", "approved", "denied")
	for i, row := range rows {
		if i == len(rows)-2 {
			b.WriteString(strings.Repeat("-", width+2+9+2+8+2+6) + "\n")
		}
		fmt.Fprintf(&b, "%s  %9d  %8d  %6d\n", pad(row.label), row.Decisions, row.Approved, row.Denied)
	}

	l := r.Lines
	b.WriteString("\n")
	writeFilesRead(&b, r.Files, r.RotatedAway, r.RotatedAwayMore)
	fmt.Fprintf(&b, "lines read: %d (%d entries, %d blank, %d bad)\n", l.Read, l.Entries, l.Blank, l.Bad)
	fmt.Fprintf(&b, "terminal lines: %d, joined by requestId and request digest into %d decisions\n", l.Terminal, r.Total.Decisions)
	if r.UndecodableDecidedBy > 0 {
		fmt.Fprintf(&b, "undecodable decidedBy: %d (counted as no decider recorded)\n", r.UndecodableDecidedBy)
	}
	writeBadLines(&b, l, r.BadLines, r.Files)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("audit: write table: %w", err)
	}
	return nil
}

// writeFilesRead writes which files a report read and the history it
// knows was rotated away, for the census and the shadow report alike.
func writeFilesRead(b *strings.Builder, files []string, rotated []RotatedAway, more int) {
	if len(files) > 0 {
		fmt.Fprintf(b, "files read: %s\n", strings.Join(files, ", "))
	}
	for _, g := range rotated {
		where := fmt.Sprintf("line %d", g.Line)
		if g.File != "" {
			where = g.File + " " + where
		}
		fmt.Fprintf(b, "history before %s rotated away: %s marks a rotation whose previous file (%d bytes) was not read\n", timeLabel(g.Before), where, g.PreviousSize)
	}
	if more > 0 {
		fmt.Fprintf(b, "history rotated away at %d more markers\n", more)
	}
}

// writeBadLines lists the bad lines by number, naming the file when more
// than one was read.
func writeBadLines(b *strings.Builder, l Lines, bad []BadLine, files []string) {
	if l.Bad == 0 {
		return
	}
	parts := make([]string, len(bad))
	for i, bl := range bad {
		parts[i] = fmt.Sprintf("line %d: %s", bl.Line, bl.Reason)
		if len(files) > 1 {
			parts[i] = bl.File + " " + parts[i]
		}
	}
	more := ""
	if l.Bad > len(bad) {
		more = fmt.Sprintf("; %d more", l.Bad-len(bad))
	}
	fmt.Fprintf(b, "bad lines: %s%s\n", strings.Join(parts, "; "), more)
}
