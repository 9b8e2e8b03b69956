package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// requestExplanation is broker check --request's answer: a request file
// as the broker reads it and the path it takes through resolution. It
// marshals to JSON as is (--json).
type requestExplanation struct {
	File string `json:"file"`
	// OwnerUID is the file's owner when it is not this user: the
	// requester an isolation-mode broker (serve --ask-group) vouches for,
	// whose rules then believe an agent name only for the uids listed in
	// agents.<name>.users. A same-uid broker refuses such a file.
	OwnerUID *int `json:"ownerUid,omitempty"`
	req      wire.Request
	// Request is the request as the broker decoded it, in wire form: a
	// malformed optional field is not in it (see Dropped).
	Request json.RawMessage `json:"request"`
	// Dropped are the optional fields the broker drops, and why.
	Dropped []string `json:"dropped,omitempty"`
	Rules   ruleStep `json:"rules"`
	// Answer is what the recorded authority answers: allow or deny (at
	// once), or ask (the request goes on, to Next).
	Answer rules.Action `json:"answer"`
	// DecidedBy is the decider the broker would write for an allow or a
	// deny; null for ask.
	DecidedBy provenance.Source `json:"decidedBy"`
	Reason    string            `json:"reason,omitempty"`
	// Next is where an ask goes after the rules, in order.
	Next []string `json:"next,omitempty"`
}

// ruleStep is how the rules take the request.
type ruleStep struct {
	Consulted bool `json:"consulted"`
	// ByDisplayValue: matched by the display value of a pi 20.x bash
	// request, under legacyBashDisplayMatch.
	ByDisplayValue bool `json:"byDisplayValue,omitempty"`
	// Why they were not consulted, and what would change it.
	Why         string             `json:"why,omitempty"`
	Hint        string             `json:"hint,omitempty"`
	Explanation *rules.Explanation `json:"explanation,omitempty"`
}

// explainRequest reads the request file at path as the broker reads one
// (a plain file, size-capped, never through a symbolic link;
// wire.DecodeRequest) and resolves it as the broker does
// (serve.AuthorityOf, serve.RecordedAuthorityOf). A file of another user
// is resolved as a broker serving the isolation mode takes it, with its
// owner as the requester (a same-uid broker refuses it, and the
// explanation says so). The error names the file and, for a malformed
// request, the field.
func explainRequest(path string, cfg *rules.Config, policy *rules.Policy) (*requestExplanation, error) {
	data, owner, err := mailbox.ReadFileIntoOf(path, mailbox.AnyOwner, nil)
	if err != nil {
		return nil, fmt.Errorf("--request: %w", err)
	}
	uid := serve.NoUID
	if owner != os.Geteuid() {
		uid = owner
	}
	req, dropped, err := wire.DecodeRequest(data)
	if err != nil {
		return nil, fmt.Errorf("--request %s: the broker rejects it: %w", path, err)
	}
	x := &requestExplanation{File: path, req: req}
	if uid != serve.NoUID {
		x.OwnerUID = &uid
	}
	if x.Request, err = wire.EncodeRequest(req); err != nil {
		return nil, fmt.Errorf("--request %s: %w", path, err)
	}
	for _, d := range dropped {
		x.Dropped = append(x.Dropped, d.Error())
	}
	a := serve.AuthorityOf(&req, cfg.LegacyBashDisplayMatch, uid)
	x.Rules = ruleStep{Consulted: a.Consulted, ByDisplayValue: a.ByDisplayValue, Why: a.Why, Hint: a.Hint}
	if a.Consulted {
		e := policy.Explain(a.Query)
		x.Rules.Explanation = &e
	}
	rd, d, decided := serve.RecordedAuthorityOf(policy, &req, cfg.LegacyBashDisplayMatch, uid)
	switch {
	case decided:
		x.Answer, x.DecidedBy, x.Reason = rd.Action, d.DecidedBy, d.DenialReason
	default:
		x.Answer, x.Next = rules.Ask, nextSteps(cfg.AuthorizerChain)
	}
	return x, nil
}

// nextSteps is where an ask goes after the rules: the configured links,
// then the terminal.
func nextSteps(links []rules.AuthorizerLink) []string {
	var next []string
	for _, l := range links {
		step := "authorizer link " + strconv.Quote(l.Name)
		if l.Mode == rules.LinkShadow {
			step += " (shadow: consulted and logged, never enforced)"
		}
		next = append(next, step)
	}
	if len(links) > 0 {
		// One chain per node (relay.Delegation).
		next = append(next, "(with --terminal relay none of the links runs: the ask is relayed to the parent)")
	}
	return append(next, "the terminal (--terminal: deny answers unavailable, tty asks the operator, relay asks the parent)")
}

// writeRequestText renders x for a terminal.
func writeRequestText(w io.Writer, x *requestExplanation) error {
	req := &x.req
	var b bytes.Buffer
	row := func(label, format string, args ...any) {
		fmt.Fprintf(&b, "  %-10s  %s\n", label, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(&b, "request %s (%s)\n", req.ID, x.File)
	from := fmt.Sprintf("agent %s, session %s", clip(req.RequesterAgentName), clip(req.RequesterSessionID))
	if req.RequesterPID > 0 {
		from += fmt.Sprintf(", pid %d", req.RequesterPID)
	}
	row("from", "%s", from)
	if x.OwnerUID != nil {
		row("owner", "uid %d: read as a broker serving --ask-group takes it (this uid is the requester; a same-uid broker refuses a file of another user)", *x.OwnerUID)
	}
	row("to", "session %s", clip(req.TargetSessionID))
	row("created", "%s", time.UnixMilli(req.CreatedAt).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	if req.Source != "" {
		row("source", "%s", req.Source)
	}
	if req.Surface != "" || req.Value != "" {
		row("shows", "%s %s", word(req.Surface), clip(req.Value))
	}
	if req.Message != "" {
		row("message", "%s", clip(req.Message))
	}
	if len(req.Payload) > 0 {
		row("payload", "%d bytes (the terminal's to show; the rules never read it)", len(req.Payload))
	}
	if sa := req.SessionApproval; sa != nil {
		var gs []string
		for _, g := range sa.Grants {
			gs = append(gs, word(g.Surface)+" "+clip(g.Pattern))
		}
		shape := ""
		if sa.Legacy {
			shape = " (pi 20.x shape)"
		}
		row("suggests", "%s%s", strings.Join(gs, ", "), shape)
	}
	writeAccessIntent(row, req.AccessIntent)
	for _, d := range x.Dropped {
		row("dropped", "%s (the broker ignores the field and goes on)", d)
	}
	b.WriteString("\n")
	switch r := x.Rules; {
	case !r.Consulted:
		fmt.Fprintf(&b, "rules: not consulted: %s\n", r.Why)
	case r.ByDisplayValue:
		b.WriteString("rules: on the display value (legacyBashDisplayMatch; the request has no access facts):\n")
	default:
		b.WriteString("rules: on the request's access facts:\n")
	}
	if x.Rules.Hint != "" {
		fmt.Fprintf(&b, "  %s\n", x.Rules.Hint)
	}
	if e := x.Rules.Explanation; e != nil {
		if err := e.WriteText(&b); err != nil {
			return err
		}
	}
	b.WriteString("\n")
	if x.Answer == rules.Ask {
		b.WriteString("answer: ask, which goes on to\n")
		for _, n := range x.Next {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	} else {
		by, err := x.DecidedBy.MarshalJSON()
		if err != nil {
			return fmt.Errorf("explain: %w", err)
		}
		fmt.Fprintf(&b, "answer: %s at once, decidedBy %s\n", x.Answer, by)
		if x.Reason != "" {
			fmt.Fprintf(&b, "  reason %s\n", clip(x.Reason))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeAccessIntent renders the child-fixed facts, or their absence.
func writeAccessIntent(row func(label, format string, args ...any), ai *wire.AccessIntent) {
	if ai == nil {
		row("access", "none: %s", serve.NoAccessFacts)
		return
	}
	var vs []string
	for _, v := range ai.MatchValues {
		vs = append(vs, clip(v))
	}
	row("access", "%s %s", word(ai.Surface), strings.Join(vs, ", "))
	if ai.BoundaryValue != nil {
		row("boundary", "%s", clip(*ai.BoundaryValue))
	}
	row("principal", "agent %s, session %s", clip(ai.Principal.AgentName), clip(ai.Principal.SessionID))
	if ai.RequesterCwd != "" {
		row("cwd", "%s", clip(ai.RequesterCwd))
	}
	if ai.Floor != "" {
		row("floor", "%s", word(ai.Floor))
	}
	for _, u := range ai.AskingUnits {
		unit := clip(u.Command)
		if u.Floor != "" {
			unit += " (floor " + word(u.Floor) + ")"
		}
		row("unit", "%s", unit)
	}
}

// clip quotes a request's string for the terminal: escaped, and cut at
// 200 bytes with the full length said.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// word is a child's surface or floor sentinel as it is when it is one
// (bash, path_read, <opaque-bash-wrapper>), else quoted like clip.
func word(s string) string {
	if s == "" || len(s) > 64 {
		return clip(s)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.:*<>", r)) {
			return clip(s)
		}
	}
	return s
}
