package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
)

// The shadow agreement report behind `broker audit --shadow` (issue 20):
// before an operator lets a link enforce, they run it in shadow mode and
// compare what it would have answered with what was decided.
//
// # Joining a verdict to its ask
//
// A shadow link's verdict (reviewlog.LinkShadow) names the request id
// but not the request's digest, and the chain writes it whenever the
// link answers: before the ask's final decision when a human deliberates,
// after it when a rule, an enforcing link or a headless terminal decides
// at once. The final decision is read as the census reads it (lines
// joined by requestId and digest, the most informative one counts). What
// ties a verdict to one ask of its id, when an id was used again after a
// broker's restart, is the chain's own entry (reviewlog.ChainResolved),
// written before any link runs: a verdict belongs to the ask of the first
// terminal line of its id after the latest chain entry of that id. A
// verdict whose chain entry the log lost (rotated away) joins the latest
// ask of its id, or the next one to come when none came yet.
//
// A verdict joins the final decision it finds; none when the log holds
// no terminal line for its ask (the broker stopped before answering, the
// line was rotated away, or the verdict has no request id). A link's
// second verdict on one ask (two brokers sharing a log, say) is counted
// once, in RepeatedVerdicts.
//
// # What is counted
//
// Per link: a confusion table, the verdict it logged (allow, deny, defer:
// what the chain would have enforced, after its failure policy and the
// delegation envelope) against the final decision (approved, denied,
// unavailable when the decider was nobody, and no decision); how many
// asks it would have decided (allow + deny); how many of those a human
// decided at the prompt (the final decider is the user), and how many
// of those the human decided otherwise (approved what the link denied,
// or denied what it allowed); and its defers by code.

// ShadowReportVersion is ShadowReport.Version. It changes only if a
// field changes meaning or disappears.
const ShadowReportVersion = 1

// ShadowReport is the shadow agreement of the links in one review log.
// Its JSON form (WriteJSON) is the stable interface for scripts.
type ShadowReport struct {
	// Version is ShadowReportVersion.
	Version int `json:"version"`
	// Links has one entry per shadow link that logged a verdict, by name.
	Links []ShadowLink `json:"links"`
	// UnreadableVerdicts counts shadow lines without a link name or with
	// a verdict other than allow, deny or defer; they are in no table.
	UnreadableVerdicts int `json:"unreadableVerdicts"`
	// RepeatedVerdicts counts a link's verdicts on an ask after its first.
	RepeatedVerdicts int `json:"repeatedVerdicts"`
	// Lines, BadLines, Files, RotatedAway and RotatedAwayMore are as in
	// Report: what was read, and what is known to be missing.
	Lines           Lines         `json:"lines"`
	BadLines        []BadLine     `json:"badLines"`
	Files           []string      `json:"files,omitempty"`
	RotatedAway     []RotatedAway `json:"rotatedAway,omitempty"`
	RotatedAwayMore int           `json:"rotatedAwayMore,omitempty"`
}

// ShadowLink is one shadow link's agreement with the final decisions.
type ShadowLink struct {
	// Name is the link's, as the log has it.
	Name string `json:"name"`
	// Verdicts counts the asks it gave a verdict on: the sum of the
	// table.
	Verdicts int `json:"verdicts"`
	// Allow, Deny and Defer are the table's rows: the final decisions of
	// the asks the link allowed, denied and deferred.
	Allow Finals `json:"allow"`
	Deny  Finals `json:"deny"`
	Defer Finals `json:"defer"`
	// WouldDecide is how many asks the link would have decided, had it
	// enforced: Allow + Deny.
	WouldDecide int `json:"wouldDecide"`
	// HumanDecided is how many of those a human decided at the prompt,
	// and HumanOtherwise how many of those the human decided otherwise
	// than the link (approved a deny, denied an allow).
	HumanDecided   int `json:"humanDecided"`
	HumanOtherwise int `json:"humanOtherwise"`
	// Failed counts the verdicts the link's failure policy gave, because
	// the link could not judge (timed out, crashed, answered nonsense);
	// they are in the table too, as what enforcing would have done.
	Failed int `json:"failed"`
	// DeferCodes counts the defers by their stable code, most frequent
	// first; Code "" counts the defers that logged none (a link that
	// gives no code, a failure the chain deferred, an allow the envelope
	// capped) or logged one that is not a code.
	DeferCodes []CodeCount `json:"deferCodes"`
}

// Finals counts the final decisions of the asks in one row of a link's
// table.
type Finals struct {
	Approved int `json:"approved"`
	Denied   int `json:"denied"`
	// Unavailable counts the asks nobody could answer (decider
	// unavailable): denied, but not by anyone.
	Unavailable int `json:"unavailable"`
	// NoDecision counts the asks the log holds no outcome for.
	NoDecision int `json:"noDecision"`
}

func (f Finals) total() int { return f.Approved + f.Denied + f.Unavailable + f.NoDecision }

// CodeCount is how many defers logged one code.
type CodeCount struct {
	Code  string `json:"code"`
	Count int    `json:"count"`
}

// ShadowFile is the shadow report of the log at path and its rotation
// (<path>.1 first), read as CensusFile reads them.
func ShadowFile(path string) (ShadowReport, error) {
	c := newShadowCounter()
	err := c.readFiles(path)
	return c.shadowReport(), err
}

// Shadow is the shadow report of one stream, read to its end. Bad lines
// are counted, never fatal; the error is only ever a read error of r.
func Shadow(r io.Reader) (ShadowReport, error) {
	return shadow(r, MaxLineBytes, readBufferSize)
}

// shadow is Shadow with the census' limits as parameters, for the fuzzer.
func shadow(r io.Reader, maxLine, bufSize int) (ShadowReport, error) {
	c := newShadowCounter()
	if err := c.read(r, "", maxLine, bufSize); err != nil {
		return c.shadowReport(), fmt.Errorf("audit: %w", err)
	}
	return c.shadowReport(), nil
}

func newShadowCounter() *counter {
	c := newCounter()
	c.shadow = &shadowJoin{current: make(map[string]*episode)}
	return c
}

// shadowJoin is what the counter keeps for the shadow report.
type shadowJoin struct {
	// current is, by request id, the ask the chain last ran on.
	current    map[string]*episode
	verdicts   []shadowVerdict
	unreadable int
	repeated   int
}

// episode is one run of the chain on an ask: the ask of its id it
// joined, and the links that gave a verdict on it.
type episode struct {
	// joined indexes the id's asks.digests, or is earlyAsk (the asks'
	// digest-less first lines, which join the first digest when one
	// comes), or notJoined while no terminal line came.
	joined int
	links  map[string]bool
}

const (
	notJoined = -1
	earlyAsk  = -2
)

// shadowVerdict is one shadow line: a link's verdict on an ask.
type shadowVerdict struct {
	link    string
	verdict string
	code    string
	id      string
	ep      *episode // nil without a request id
	failed  bool     // the link could not judge: its failure policy answered
}

// shadowEntry reads the chain's lines the shadow report needs.
func (c *counter) shadowEntry(event string, m map[string]json.RawMessage) {
	s := c.shadow
	switch event {
	case reviewlog.ChainResolved:
		if id := str(m, reviewlog.KeyRequestID); id != "" {
			s.current[id] = &episode{joined: notJoined}
		}
	case reviewlog.LinkShadow:
		v := shadowVerdict{link: str(m, "name"), verdict: str(m, "verdict"), id: str(m, reviewlog.KeyRequestID),
			failed: str(m, "failure") != ""}
		switch {
		case v.link == "":
			s.unreadable++
			return
		case v.verdict == "defer":
			v.code = authorizer.CleanCode(str(m, "code"))
		case v.verdict != "allow" && v.verdict != "deny":
			s.unreadable++
			return
		}
		if v.id != "" {
			v.ep = s.current[v.id]
			if v.ep == nil {
				// The chain's entry is missing: join what the id has.
				v.ep = &episode{joined: notJoined}
				if a := c.byID[v.id]; a != nil {
					v.ep.joined = latestAsk(a)
				}
				s.current[v.id] = v.ep
			}
			if v.ep.links[v.link] {
				s.repeated++
				return
			}
			if v.ep.links == nil {
				v.ep.links = make(map[string]bool)
			}
			v.ep.links[v.link] = true
		}
		s.verdicts = append(s.verdicts, v)
	}
}

// shadowJoined notes that a terminal line of id joined a; the chain's
// latest run on id, when it has joined nothing yet, joins that ask.
func (c *counter) shadowJoined(id string, a *asks) {
	if ep := c.shadow.current[id]; ep != nil && ep.joined == notJoined {
		ep.joined = latestAsk(a)
	}
}

// latestAsk is the index of the ask a's latest line joined.
func latestAsk(a *asks) int {
	if len(a.digests) == 0 {
		return earlyAsk
	}
	return a.latest
}

// final is the decision of the ask an episode joined.
func (c *counter) final(v shadowVerdict) (decision, bool) {
	if v.ep == nil {
		return decision{}, false
	}
	a := c.byID[v.id]
	if a == nil {
		return decision{}, false
	}
	switch i := v.ep.joined; {
	case i == earlyAsk && len(a.digests) > 0:
		return a.digests[0].best, true
	case i == earlyAsk && a.hasEarly:
		return a.early, true
	case i >= 0 && i < len(a.digests):
		return a.digests[i].best, true
	}
	return decision{}, false
}

func (c *counter) shadowReport() ShadowReport {
	links := map[string]*ShadowLink{}
	codes := map[string]map[string]int{}
	for _, v := range c.shadow.verdicts {
		l := links[v.link]
		if l == nil {
			l = &ShadowLink{Name: v.link}
			links[v.link] = l
			codes[v.link] = map[string]int{}
		}
		l.Verdicts++
		if v.failed {
			l.Failed++
		}
		row := map[string]*Finals{"allow": &l.Allow, "deny": &l.Deny, "defer": &l.Defer}[v.verdict]
		d, ok := c.final(v)
		switch {
		case !ok:
			row.NoDecision++
		case d.decider.kind == string(provenance.KindUnavailable):
			row.Unavailable++
		case d.outcome == outcomeApproved:
			row.Approved++
		case d.outcome == outcomeDenied:
			row.Denied++
		default:
			row.NoDecision++
		}
		if v.verdict == "defer" {
			codes[v.link][v.code]++
			continue
		}
		l.WouldDecide++
		if ok && d.decider.kind == string(provenance.KindUser) {
			l.HumanDecided++
			if v.verdict == "allow" && d.outcome == outcomeDenied || v.verdict == "deny" && d.outcome == outcomeApproved {
				l.HumanOtherwise++
			}
		}
	}

	r := ShadowReport{
		Version:            ShadowReportVersion,
		Links:              make([]ShadowLink, 0, len(links)),
		UnreadableVerdicts: c.shadow.unreadable,
		RepeatedVerdicts:   c.shadow.repeated,
		Lines:              c.lines,
		BadLines:           append([]BadLine{}, c.badExamples...),
		Files:              c.files,
		RotatedAway:        c.rotated,
		RotatedAwayMore:    c.rotatedMore,
	}
	for name, l := range links {
		l.DeferCodes = make([]CodeCount, 0, len(codes[name]))
		for code, n := range codes[name] {
			l.DeferCodes = append(l.DeferCodes, CodeCount{Code: code, Count: n})
		}
		sort.Slice(l.DeferCodes, func(i, j int) bool {
			a, b := l.DeferCodes[i], l.DeferCodes[j]
			if a.Count != b.Count {
				return a.Count > b.Count
			}
			return a.Code < b.Code
		})
		r.Links = append(r.Links, *l)
	}
	sort.Slice(r.Links, func(i, j int) bool { return r.Links[i].Name < r.Links[j].Name })
	return r
}
