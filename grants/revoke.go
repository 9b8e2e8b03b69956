package grants

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/seed6639df8c/courier/rules"
)

// ErrNoGrant is wrapped by the error of a Revoke that matched no grant.
var ErrNoGrant = errors.New("no such grant")

// Selector picks the grants Revoke removes: those with Pattern, or All of
// them; Surface, when set, narrows either to that one surface.
type Selector struct {
	// Pattern is a grant's pattern exactly as journaled (as listed).
	Pattern string
	// Surface is a grant's surface exactly (path_write, not path).
	Surface string
	// All selects every grant instead of those with Pattern.
	All bool
}

func (s Selector) check() error {
	switch {
	case s.All && s.Pattern != "":
		return fmt.Errorf("revoke: a pattern (%q) and all grants at once; give one", s.Pattern)
	case !s.All && s.Pattern == "":
		return errors.New("revoke: no pattern; give the pattern of a grant as listed, or all grants")
	}
	return nil
}

func (s Selector) matches(g rules.SessionGrant) bool {
	return (s.All || g.Pattern == s.Pattern) && (s.Surface == "" || g.Surface == s.Surface)
}

// String says what s selects, for messages.
func (s Selector) String() string {
	switch {
	case !s.All && s.Surface != "":
		return fmt.Sprintf("with pattern %q on surface %s", s.Pattern, s.Surface)
	case !s.All:
		return fmt.Sprintf("with pattern %q", s.Pattern)
	case s.Surface != "":
		return "on surface " + s.Surface
	}
	return "at all"
}

// NoMatchError is Revoke's error when no grant matches: it names the
// journal and what it holds, so the caller can pick again.
type NoMatchError struct {
	// Journal is the journal file.
	Journal string
	// Selector is what was asked for.
	Selector Selector
	// Have is every grant the journal holds.
	Have []rules.SessionGrant
}

// maxListedInError bounds the grants a NoMatchError spells out.
const maxListedInError = 20

// Error names the journal, what was asked for and what is there.
func (e *NoMatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "grant journal %s: no grant %s", e.Journal, e.Selector)
	switch len(e.Have) {
	case 0:
		b.WriteString("; it holds no grants")
		return b.String()
	case 1:
		b.WriteString("; it holds 1 grant: ")
	default:
		fmt.Fprintf(&b, "; it holds %d grants: ", len(e.Have))
	}
	for i, g := range e.Have {
		if i == maxListedInError {
			fmt.Fprintf(&b, ", and %d more", len(e.Have)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %q", g.Surface, g.Pattern)
	}
	return b.String()
}

// Unwrap returns ErrNoGrant.
func (e *NoMatchError) Unwrap() error { return ErrNoGrant }

// Revoke removes the grants sel selects from the journal and returns
// them, in the journal's order. It holds the directory lock while it
// reads and rewrites the file (atomically and durably, as Save does), so
// no grant another process records meanwhile is lost; a broker serving
// the session takes the change in on its next Reload.
//
// A selector that matches nothing is a *NoMatchError (All on an empty or
// missing journal is not: there was nothing to revoke, and nothing is
// written). A journal that is refused (see the package documentation) is
// an error naming the file, and nothing is written.
func (j *Journal) Revoke(sel Selector) ([]rules.SessionGrant, error) {
	if err := sel.check(); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock, err := j.lock(false)
	if errors.Is(err, os.ErrNotExist) {
		// No directory: no journal of either side yet.
		return nil, j.noMatch(sel, nil)
	}
	if err != nil {
		return nil, err
	}
	defer unlock()
	entries, _, err := j.read()
	if err != nil {
		return nil, err
	}
	var keep []Entry
	var removed []rules.SessionGrant
	for _, e := range entries {
		if sel.matches(e.Grant) {
			removed = append(removed, e.Grant)
		} else {
			keep = append(keep, e)
		}
	}
	if len(removed) == 0 {
		return nil, j.noMatch(sel, grantsOf(entries))
	}
	if err := j.write(keep); err != nil {
		return nil, err
	}
	return removed, nil
}

// noMatch is Revoke's answer when nothing matched: an error for a
// pattern, nothing for All.
func (j *Journal) noMatch(sel Selector, have []rules.SessionGrant) error {
	if sel.All && sel.Surface == "" && len(have) == 0 {
		return nil
	}
	return &NoMatchError{Journal: j.path, Selector: sel, Have: have}
}
