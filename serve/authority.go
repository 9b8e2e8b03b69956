package serve

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// NoAccessFacts is why the rules are not consulted for a request without
// access facts (no accessIntent): a pi 20.x child's, which fixes none.
const NoAccessFacts = "no access facts: pi 20.x child"

// LegacyBashDisplayMatchKey is the config key that matches such a request
// by its display value when it is bash (rules.Config.LegacyBashDisplayMatch).
const LegacyBashDisplayMatchKey = "legacyBashDisplayMatch"

// Authority is how the recorded authority (the first step of resolution,
// see the package doc) takes one request: what it asks the rules, or why
// it asks them nothing.
type Authority struct {
	// Consulted reports that the rules are asked, with Query.
	Consulted bool
	Query     rules.Query
	// ByDisplayValue reports that Query is the display value of a bash
	// request without access facts, matched because the operator set
	// legacyBashDisplayMatch; the provenance says so (DisplayValueOrigin).
	ByDisplayValue bool
	// Why says why the rules are not asked (NoAccessFacts), "" when they
	// are; Hint then names what in the config would change that, "" when
	// nothing would.
	Why, Hint string
}

// AuthorityFor is how the recorded authority takes req, legacy being the
// operator's legacyBashDisplayMatch: by the child-fixed access facts; for
// a request without them, by the display value of a bash request when
// legacy is set; otherwise not at all, and the ask floors to the chain and
// the terminal.
func AuthorityFor(req *wire.Request, legacy bool) Authority {
	return AuthorityOf(req, legacy, NoUID)
}

// AuthorityOf is AuthorityFor for a request whose file uid owns, in the
// isolation mode (NoUID in the same-uid mode): the query says so, and the
// rules believe its agent name only for the uids the operator listed for
// that agent (rules.Query.Isolated, rules.AgentTrust).
func AuthorityOf(req *wire.Request, legacy bool, uid int) Authority {
	f := from{uid: uid}
	switch {
	case req.AccessIntent != nil:
		return Authority{Consulted: true, Query: f.query(rules.QueryFromIntent(req.AccessIntent))}
	case legacy && req.Surface == "bash" && req.Value != "":
		return Authority{Consulted: true, ByDisplayValue: true, Query: f.query(rules.Query{Surface: "bash", MatchValues: []string{req.Value}})}
	}
	a := Authority{Why: NoAccessFacts}
	switch {
	case req.Surface == "bash" && !legacy:
		a.Hint = strconv.Quote(LegacyBashDisplayMatchKey) + ": true in the config matches bash requests by their display value"
	case req.Surface == "bash":
		a.Hint = "the request has no display value to match"
	case legacy:
		a.Hint = LegacyBashDisplayMatchKey + " matches bash requests only"
	}
	return a
}

// RecordedAuthority resolves req by policy's rules and session grants as
// the broker does before anything else: the resolution (the zero
// Resolution when the rules are not consulted, see AuthorityFor), and
// the decision when they allow or deny it (decided). Anything else goes
// on to the authorizer chain and the terminal.
func RecordedAuthority(policy *rules.Policy, req *wire.Request, legacy bool) (rd rules.Resolution, d decision.Decision, decided bool) {
	return RecordedAuthorityOf(policy, req, legacy, NoUID)
}

// RecordedAuthorityOf is RecordedAuthority for a request whose file uid
// owns, in the isolation mode (NoUID in the same-uid mode; AuthorityOf).
// rd.AgentTrust says how far the agent name was believed.
func RecordedAuthorityOf(policy *rules.Policy, req *wire.Request, legacy bool, uid int) (rd rules.Resolution, d decision.Decision, decided bool) {
	a := AuthorityOf(req, legacy, uid)
	if !a.Consulted {
		return rules.Resolution{}, decision.Decision{}, false
	}
	rd = policy.Resolve(a.Query)
	if rd.Action != rules.Allow && rd.Action != rules.Deny {
		return rd, decision.Decision{}, false
	}
	var by provenance.Source
	if a.ByDisplayValue {
		// The display value is what a 20.x child shows, not facts it
		// fixed: say so in the provenance.
		by = provenance.Rule{Surface: "bash", Pattern: rd.Pattern, Origin: provenance.Str(DisplayValueOrigin + "/" + string(rd.Origin))}
	} else {
		by = rd.DecidedBy()
	}
	if rd.Action == rules.Allow {
		return rd, decision.Allow(by), true
	}
	return rd, decision.Deny(rd.Reason, by), true
}

// askResolution is the recorded authority's answer to an ask it left to
// the chain and the terminal, which the terminal shows: the zero
// Resolution when the rules were not consulted, which the operator hears
// of (noticeNoFacts).
func (b *Broker) askResolution(req *wire.Request, f from) rules.Resolution {
	a := AuthorityOf(req, b.LegacyBashDisplayMatch, f.uid)
	if !a.Consulted {
		b.noticeNoFacts(req, a)
		return rules.Resolution{}
	}
	return b.Policy.Resolve(a.Query)
}

// noticeNoFacts tells the operator, on OnNotice and in the review log,
// that the rules were not consulted for req and why, with the config key
// that would change it: once per run for a bash request and once for any
// other, so that a first read does not hide the key a later bash request
// needs. Once, not per agent: the names are the children's to choose, and
// a notice per name would let one child fill the operator's terminal.
func (b *Broker) noticeNoFacts(req *wire.Request, a Authority) {
	once := &b.noFactsNoticed[0]
	if req.Surface == "bash" {
		once = &b.noFactsNoticed[1]
	}
	if !once.CompareAndSwap(false, true) {
		return
	}
	what := "a request"
	if req.Surface != "" {
		what = "a " + quoteShort(req.Surface) + " request"
	}
	msg := fmt.Sprintf("the rules were not consulted for %s of agent %s (session %s): %s; it goes to the authorizer chain and the terminal",
		what, quoteShort(req.RequesterAgentName), quoteShort(req.RequesterSessionID), a.Why)
	if a.Hint != "" {
		msg += "; " + a.Hint
	}
	msg += " (said once per run)"
	p := parties(req)
	b.log(reviewlog.ForwardingWarningEntry{Message: msg, RequestID: reviewlog.Str(req.ID), Parties: &p})
	if b.OnNotice != nil {
		b.OnNotice(msg)
	}
}

// quoteShort quotes a child's string for one line of the operator's
// stderr: escaped (no control character, no newline reaches the
// terminal), and cut at 64 bytes.
func quoteShort(s string) string {
	const max = 64
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}
