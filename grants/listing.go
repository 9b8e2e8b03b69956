package grants

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/seed6639df8c/courier/provenance"
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

// Listed is one grant, what it was given for, and where it is from.
type Listed struct {
	Surface string `json:"surface"`
	Pattern string `json:"pattern"`
	// RequestID, Asked, Agent, RecordedAt, DecidedBy and Edited are what
	// the grant was given for (grants.Asked).
	RequestID  string            `json:"requestId"`
	Asked      ListedAsk         `json:"asked"`
	Agent      string            `json:"agent"`
	RecordedAt string            `json:"recordedAt"`
	DecidedBy  provenance.Source `json:"decidedBy"`
	Edited     bool              `json:"edited"`
	// Journal is the file that holds it: revoking it edits that file.
	Journal string `json:"journal"`
}

// ListedAsk is the ask a listed grant was given on.
type ListedAsk struct {
	Surface string `json:"surface"`
	Value   string `json:"value"`
}

// List reads the journal as it is now. A missing journal lists no grants;
// one that is refused is an error naming the file and what to do.
func (j *Journal) List() (Listing, error) {
	j.mu.Lock()
	entries, _, err := j.read()
	j.mu.Unlock()
	if err != nil {
		return Listing{}, err
	}
	l := Listing{Session: j.session, Side: j.side, Journal: j.path, Grants: make([]Listed, len(entries))}
	for i, e := range entries {
		a := e.Asked
		l.Grants[i] = Listed{
			Surface: e.Grant.Surface, Pattern: e.Grant.Pattern,
			RequestID: a.RequestID, Asked: ListedAsk{Surface: a.Surface, Value: a.Value}, Agent: a.Agent,
			RecordedAt: a.At.UTC().Format(timeLayout), DecidedBy: a.DecidedBy, Edited: a.Edited,
			Journal: j.path,
		}
	}
	return l, nil
}

// String renders e for a human on one line: the grant, then what it was
// given for, as the broker prints the grants it loaded.
func (e Entry) String() string {
	return fmt.Sprintf("%s %q (%s)", shown(e.Grant.Surface), e.Grant.Pattern, e.Asked)
}

// shown is s as an operator's terminal may print it: as it is when it is
// one word of visible characters, else quoted, so that a journal's text
// can neither hide nor move what surrounds it.
func shown(s string) string {
	for _, r := range s {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '"' {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// String renders what a grant was given for: the request, the ask, the
// agent, when and who answered.
func (a Asked) String() string {
	if a.RequestID == "" {
		return "nothing known of the ask it was given on"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "request %s: %s %q asked by %q, recorded %s, answered by %s",
		shown(a.RequestID), shown(a.Surface), a.Value, a.Agent, a.At.UTC().Format(timeLayout), describeDecider(a.DecidedBy))
	if a.Edited {
		b.WriteString(", pattern edited at the prompt")
	}
	return b.String()
}

// describeDecider names who answered in words.
func describeDecider(s provenance.Source) string {
	switch v := s.(type) {
	case nil:
		return "nobody recorded"
	case provenance.User:
		return "the user via " + shown(string(v.Via))
	case provenance.Authorizer:
		return "authorizer " + strconv.Quote(v.Name)
	case provenance.Forwarded:
		from := "the parent"
		if v.ResponderSessionID != nil {
			from = "session " + strconv.Quote(*v.ResponderSessionID)
		}
		return describeDecider(v.Decision) + " at " + from
	}
	return string(s.Kind())
}

// kind names n of a side's grants for a human.
func (s Side) kind(n int) string {
	k := "whole-session grant"
	switch s {
	case Child:
		k = "this-subagent-only grant"
	case Vouched:
		k = "vouched this-subagent-only grant"
	}
	if n != 1 {
		k += "s"
	}
	return k
}

// WriteTable prints the listing for a human: a header naming the session
// and the journal, then each grant, surface and quoted pattern, with what
// it was given for on the line below.
func (l Listing) WriteTable(w io.Writer) error {
	if len(l.Grants) == 0 {
		_, err := fmt.Fprintf(w, "no %s of session %q in %s\n", l.Side.kind(0), l.Session, l.Journal)
		return err
	}
	fmt.Fprintf(w, "%d %s of session %q, from %s:\n", len(l.Grants), l.Side.kind(len(l.Grants)), l.Session, l.Journal)
	width := 0
	for _, g := range l.Grants {
		width = max(width, len(shown(g.Surface)))
	}
	for _, g := range l.Grants {
		a := Asked{RequestID: g.RequestID, Surface: g.Asked.Surface, Value: g.Asked.Value, Agent: g.Agent, DecidedBy: g.DecidedBy, Edited: g.Edited}
		a.At, _ = time.Parse(time.RFC3339Nano, g.RecordedAt)
		if _, err := fmt.Fprintf(w, "  %-*s  %q\n      %s\n", width, shown(g.Surface), g.Pattern, a); err != nil {
			return err
		}
	}
	return nil
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
