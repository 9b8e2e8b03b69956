package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// WriteJSON writes the shadow report as indented JSON, for scripts.
func (r ShadowReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("audit: write JSON shadow report: %w", err)
	}
	return nil
}

// noCodeLabel is how the table names the defers that logged no code.
const noCodeLabel = "(no code)"

// WriteTable writes the shadow report for a person: per link, its
// confusion table, how many asks it would have decided and how a human
// decided them, its defers by code; then where the lines went.
func (r ShadowReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	if len(r.Links) == 0 {
		b.WriteString("no shadow link gave a verdict in this log\n")
	}
	for i, l := range r.Links {
		if i > 0 {
			b.WriteString("\n")
		}
		writeShadowLink(&b, l)
	}
	b.WriteString("\n")
	writeFilesRead(&b, r.Files, r.RotatedAway, r.RotatedAwayMore)
	fmt.Fprintf(&b, "lines read: %d (%d entries, %d blank, %d bad)\n", r.Lines.Read, r.Lines.Entries, r.Lines.Blank, r.Lines.Bad)
	if r.UnreadableVerdicts > 0 {
		fmt.Fprintf(&b, "unreadable shadow verdicts: %d (no link name, or a verdict other than allow, deny, defer)\n", r.UnreadableVerdicts)
	}
	if r.RepeatedVerdicts > 0 {
		fmt.Fprintf(&b, "repeated shadow verdicts: %d (a link's second verdict on one ask, not counted)\n", r.RepeatedVerdicts)
	}
	writeBadLines(&b, r.Lines, r.BadLines, r.Files)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("audit: write shadow table: %w", err)
	}
	return nil
}

// writeShadowLink writes one link's part of the table. The link's name
// is quoted: it comes from the log.
func writeShadowLink(b *strings.Builder, l ShadowLink) {
	name := l.Name
	if utf8.RuneCountInString(name) > maxLabelRunes {
		name = string([]rune(name)[:maxLabelRunes-1]) + "…"
	}
	fmt.Fprintf(b, "shadow link %s: %d %s\n", strconv.Quote(name), l.Verdicts, plural(l.Verdicts, "verdict", "verdicts"))
	fmt.Fprintf(b, "%-7s  %8s  %6s  %11s  %11s\n", "verdict", "approved", "denied", "unavailable", "no decision")
	for _, row := range []struct {
		label string
		f     Finals
	}{{"allow", l.Allow}, {"deny", l.Deny}, {"defer", l.Defer}} {
		fmt.Fprintf(b, "%-7s  %8d  %6d  %11d  %11d\n", row.label, row.f.Approved, row.f.Denied, row.f.Unavailable, row.f.NoDecision)
	}
	fmt.Fprintf(b, "would have decided: %d (allow %d, deny %d)\n", l.WouldDecide, l.Allow.total(), l.Deny.total())
	fmt.Fprintf(b, "decided by a human: %d of them, %d otherwise than the link\n", l.HumanDecided, l.HumanOtherwise)
	if l.Failed > 0 {
		fmt.Fprintf(b, "failed to judge: %d (its failure policy answered)\n", l.Failed)
	}
	if len(l.DeferCodes) == 0 {
		return
	}
	parts := make([]string, len(l.DeferCodes))
	for i, c := range l.DeferCodes {
		code := c.Code
		if code == "" {
			code = noCodeLabel
		}
		parts[i] = fmt.Sprintf("%s %d", code, c.Count)
	}
	fmt.Fprintf(b, "defers by code: %s\n", strings.Join(parts, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
