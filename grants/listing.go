package grants

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/seed6639df8c/courier/rules"
)

// Listing is what one journal holds, for an operator: the grants
// `broker grants list` and `child grants list` print.
type Listing struct {
	// Session is the session whose grants these are.
	Session string `json:"session"`
	// Side says whose: the broker's whole-session grants or a child's own.
	Side Side `json:"side"`
	// Journal is the file they were read from.
	Journal string `json:"journal"`
	// Grants are in recording order.
	Grants []Listed `json:"grants"`
}

// Listed is one grant and where it is from.
type Listed struct {
	Surface string `json:"surface"`
	Pattern string `json:"pattern"`
	// Journal is the file that holds it: revoking it edits that file.
	Journal string `json:"journal"`
}

// List reads the journal as it is now. A missing journal lists no grants;
// one that is unsafe or malformed is an error naming the file.
func (j *Journal) List() (Listing, error) {
	j.mu.Lock()
	snap, _, err := j.read()
	j.mu.Unlock()
	if err != nil {
		return Listing{}, err
	}
	l := Listing{Session: j.session, Side: j.side, Journal: j.path, Grants: make([]Listed, len(snap.Grants))}
	for i, g := range snap.Grants {
		l.Grants[i] = Listed{Surface: g.Surface, Pattern: g.Pattern, Journal: j.path}
	}
	return l, nil
}

// kind names n of a side's grants for a human.
func (s Side) kind(n int) string {
	k := "whole-session grant"
	if s == Child {
		k = "this-subagent-only grant"
	}
	if n != 1 {
		k += "s"
	}
	return k
}

// WriteTable prints the listing for a human: a header naming the session
// and the journal, then one grant a line, surface and quoted pattern.
func (l Listing) WriteTable(w io.Writer) error {
	if len(l.Grants) == 0 {
		_, err := fmt.Fprintf(w, "no %s of session %q in %s\n", l.Side.kind(0), l.Session, l.Journal)
		return err
	}
	fmt.Fprintf(w, "%d %s of session %q, from %s:\n", len(l.Grants), l.Side.kind(len(l.Grants)), l.Session, l.Journal)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, g := range l.Grants {
		fmt.Fprintf(tw, "  %s\t%q\n", g.Surface, g.Pattern)
	}
	return tw.Flush()
}

// WriteJSON prints the listing as one indented JSON object, leaving <, >
// and & as they are (a pattern such as <opaque-bash-wrapper> reads as
// written).
func (l Listing) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(l)
}

// WriteRevoked prints what Revoke removed from journal, one grant a line.
func WriteRevoked(w io.Writer, journal string, removed []rules.SessionGrant) error {
	if len(removed) == 0 {
		_, err := fmt.Fprintf(w, "no grants to revoke in %s\n", journal)
		return err
	}
	for _, g := range removed {
		if _, err := fmt.Fprintf(w, "revoked %s %q from %s\n", g.Surface, g.Pattern, journal); err != nil {
			return err
		}
	}
	return nil
}
