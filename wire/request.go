package wire

import (
	"encoding/json"
	"fmt"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// RequestSource says what kind of gate raised a request. A missing source
// means ToolCall.
type RequestSource string

// The request sources pi writes.
const (
	SourceToolCall   RequestSource = "tool_call"
	SourceSkillInput RequestSource = "skill_input"
	SourceSkillRead  RequestSource = "skill_read"
)

// Request is a ForwardedPermissionRequest, requests/<id>.json: a child's
// ask, written by the child and drained by the serving broker. It holds
// both generations of pi's wire: 25.x (payload, accessIntent, grants) and
// 20.7.3 (message, the {surface, patterns} approval shape).
type Request struct {
	// ID names the request and response files; it always passes ValidateID.
	ID string
	// CreatedAt is when the child built the request, ms since the epoch.
	CreatedAt          int64
	RequesterSessionID string
	TargetSessionID    string
	RequesterAgentName string

	// Message is the child's prompt text. pi 20.7.3 requires it (its
	// parent deletes a request without one); 25.x children omit it.
	Message string
	// Payload is the child's prompt facts, an opaque JSON object carried
	// through unchanged; nil when absent.
	Payload json.RawMessage
	// Source is empty when absent.
	Source RequestSource
	// Surface and Value are the display projection (the child's tool name
	// and its argument), empty when absent or null.
	Surface, Value string
	// SessionApproval is the child's suggested session grants, nil when absent.
	SessionApproval *SessionApproval
	// AccessIntent is the child-fixed access facts, nil when absent or
	// malformed: the ask then floors to the chain and the terminal.
	AccessIntent *AccessIntent
	// RequesterPID is courier's extension: the child's process id, so a
	// broker never prompts a human for a dead child. Zero when absent;
	// pi readers ignore it.
	RequesterPID int
}

// SuggestedGrant is one suggested session grant: allow Pattern on Surface.
type SuggestedGrant struct {
	Surface string
	Pattern string
}

// SessionApproval is the grants a "yes, for this session" answer records.
type SessionApproval struct {
	Grants []SuggestedGrant
	// Legacy marks the pi 20.7.3 shape {surface, patterns[]}, which
	// encodes back to that shape; all its grants share one surface.
	Legacy bool
}

// AccessIntent is the child-fixed facts of an ask (pi's
// ForwardedAccessIntent). The broker matches MatchValues as they are and
// never re-derives them through its own working directory.
type AccessIntent struct {
	// Surface is the gate surface: path, path_read, bash, a tool name...
	Surface     string
	MatchValues []string
	// BoundaryValue is the canonical path on path surfaces, nil otherwise.
	BoundaryValue *string
	// RequesterCwd and Principal are provenance; authorizer links see them
	// only when the operator discloses them.
	RequesterCwd string
	Principal    Principal
	// Floor is a synthetic floor sentinel such as <opaque-bash-wrapper>;
	// empty when absent. It turns a non-session allow into an ask.
	Floor string
	// AskingUnits lists the bash chain units that asked, nil when absent.
	AskingUnits []AskingUnit
}

// Principal is who asked: the child session and its agent, to which
// serving-side rules are scoped.
type Principal struct {
	SessionID string
	AgentName string
}

// AskingUnit is one bash chain unit that asked.
type AskingUnit struct {
	Command string
	// Floor is empty when absent.
	Floor string
}

// DecodeRequest reads a request file. A missing or malformed required
// field (id, createdAt, requesterSessionId, targetSessionId,
// requesterAgentName) rejects the file with an error wrapping ErrMalformed
// that names the field. A malformed optional field is dropped on its own
// and reported in dropped; unknown fields are ignored. Nothing returned
// shares memory with data.
func DecodeRequest(data []byte) (req Request, dropped []*FieldError, err error) {
	return decodeRequest(data, true)
}

// DecodeRequestSlim is DecodeRequest without the child's prompt text and
// payload: the same checks, the same error and the same dropped fields
// (a message that is not a string, a payload that is not an object), but
// Message is "" and Payload nil whatever the file holds. A broker deciding
// by its rules reads neither, and each may be most of a megabyte that
// DecodeRequest would copy (docs/decisions/0014-fair-share-and-bounds.md).
// Nothing returned shares memory with data.
func DecodeRequestSlim(data []byte) (req Request, dropped []*FieldError, err error) {
	return decodeRequest(data, false)
}

// decodeRequest is DecodeRequest, which keeps the message and the payload
// when text is true, and only checks their kinds otherwise.
func decodeRequest(data []byte, text bool) (req Request, dropped []*FieldError, err error) {
	o, err := parseObject(data)
	if err != nil {
		return Request{}, nil, err
	}
	var ferr *FieldError
	if req.ID, ferr = o.str("id", "id"); ferr != nil {
		return Request{}, nil, ferr
	}
	if err := ValidateID(req.ID); err != nil {
		return Request{}, nil, &FieldError{Field: "id", Reason: err.Error()}
	}
	if req.CreatedAt, ferr = o.millis("createdAt", "createdAt"); ferr != nil {
		return Request{}, nil, ferr
	}
	if req.RequesterSessionID, ferr = o.nonEmptyStr("requesterSessionId", "requesterSessionId"); ferr != nil {
		return Request{}, nil, ferr
	}
	if req.TargetSessionID, ferr = o.nonEmptyStr("targetSessionId", "targetSessionId"); ferr != nil {
		return Request{}, nil, ferr
	}
	if req.RequesterAgentName, ferr = o.nonEmptyStr("requesterAgentName", "requesterAgentName"); ferr != nil {
		return Request{}, nil, ferr
	}

	drop := func(ferr *FieldError) { dropped = append(dropped, ferr) }
	if raw, ok := o.get("message"); ok {
		// A checked document's string is valid as it stands: its kind is
		// all rawString would find wrong.
		if kindOf(raw) != strictjson.KindString {
			drop(&FieldError{Field: "message", Reason: "expected a string, got " + describe(raw)})
		} else if text {
			req.Message, _ = rawString(raw, "message")
		}
	}
	if raw, ok := o.get("payload"); ok {
		if kindOf(raw) == '{' {
			if text {
				req.Payload = append(json.RawMessage(nil), raw...)
			}
		} else {
			drop(&FieldError{Field: "payload", Reason: "expected an object, got " + describe(raw)})
		}
	}
	if raw, ok := o.get("source"); ok {
		s, ferr := rawString(raw, "source")
		switch src := RequestSource(s); {
		case ferr != nil:
			drop(ferr)
		case src == SourceToolCall || src == SourceSkillInput || src == SourceSkillRead:
			req.Source = src
		default:
			drop(&FieldError{Field: "source", Reason: fmt.Sprintf("unknown source %q, expected tool_call, skill_input or skill_read", s)})
		}
	}
	req.Surface = o.optionalDisplay("surface", drop)
	req.Value = o.optionalDisplay("value", drop)
	if raw, ok := o.get("sessionApproval"); ok {
		if req.SessionApproval, ferr = decodeSessionApproval(raw); ferr != nil {
			drop(ferr)
		}
	}
	if raw, ok := o.get("accessIntent"); ok {
		if req.AccessIntent, ferr = decodeAccessIntent(raw); ferr != nil {
			drop(ferr)
		}
	}
	if raw, ok := o.get("requesterPid"); ok {
		pid, ferr := rawMillis(raw, "requesterPid")
		if ferr == nil && (!isIntegral(raw) || pid <= 0 || pid > 1<<31-1) {
			ferr = &FieldError{Field: "requesterPid", Reason: "expected a positive integer process id"}
		}
		if ferr != nil {
			drop(ferr)
		} else {
			req.RequesterPID = int(pid)
		}
	}
	return req, dropped, nil
}

// optionalDisplay reads a string|null display member; null and absent both
// read as "".
func (o object) optionalDisplay(field string, drop func(*FieldError)) string {
	raw, ok := o.get(field)
	if !ok || isNull(raw) {
		return ""
	}
	s, ferr := rawString(raw, field)
	if ferr != nil {
		drop(ferr)
	}
	return s
}

func decodeSessionApproval(raw json.RawMessage) (*SessionApproval, *FieldError) {
	const path = "sessionApproval"
	o, err := asObject(raw)
	if err != nil {
		return nil, &FieldError{Field: path, Reason: "expected an object, got " + describe(raw)}
	}
	if grantsRaw, ok := o.get("grants"); ok {
		items, ok := arrayItems(grantsRaw)
		if !ok || len(items) == 0 {
			return nil, &FieldError{Field: path + ".grants", Reason: "expected a non-empty array of {surface, pattern}"}
		}
		sa := &SessionApproval{Grants: make([]SuggestedGrant, 0, len(items))}
		for i, item := range items {
			g, err := asObject(item)
			if err != nil {
				return nil, &FieldError{Field: itemPath(path+".grants", i), Reason: "expected an object {surface, pattern}, got " + describe(item)}
			}
			surface, ferr := g.nonEmptyStr("surface", "")
			if ferr != nil {
				return nil, ferr.at(itemPath(path+".grants", i) + ".surface")
			}
			pattern, ferr := g.nonEmptyStr("pattern", "")
			if ferr != nil {
				return nil, ferr.at(itemPath(path+".grants", i) + ".pattern")
			}
			sa.Grants = append(sa.Grants, SuggestedGrant{Surface: surface, Pattern: pattern})
		}
		return sa, nil
	}
	// pi 20.7.3 shape: one surface, several patterns.
	surface, ferr := o.nonEmptyStr("surface", path+".surface")
	if ferr != nil {
		return nil, &FieldError{Field: path, Reason: "expected {grants: [...]} or the 20.x shape {surface, patterns: [...]}"}
	}
	patterns, ferr := o.strings("patterns", path+".patterns")
	if ferr != nil {
		return nil, ferr
	}
	sa := &SessionApproval{Legacy: true, Grants: make([]SuggestedGrant, 0, len(patterns))}
	for i, p := range patterns {
		if p == "" {
			return nil, &FieldError{Field: itemPath(path+".patterns", i), Reason: "empty, expected a pattern"}
		}
		sa.Grants = append(sa.Grants, SuggestedGrant{Surface: surface, Pattern: p})
	}
	return sa, nil
}

// strings reads a member that must be a non-empty array of strings.
func (o object) strings(field, path string) ([]string, *FieldError) {
	raw, ok := o.get(field)
	if !ok {
		return nil, &FieldError{Field: path, Reason: "missing, expected a non-empty array of strings"}
	}
	items, ok := arrayItems(raw)
	if !ok {
		return nil, &FieldError{Field: path, Reason: "expected a non-empty array of strings, got " + describe(raw)}
	}
	if len(items) == 0 {
		return nil, &FieldError{Field: path, Reason: "empty, expected a non-empty array of strings"}
	}
	out := make([]string, len(items))
	for i, item := range items {
		s, ferr := rawString(item, "")
		if ferr != nil {
			return nil, ferr.at(itemPath(path, i))
		}
		out[i] = s
	}
	return out, nil
}

// decodeAccessIntent accepts only a fully well-formed intent: a malformed
// part rejects the whole intent, which then means "escalate".
func decodeAccessIntent(raw json.RawMessage) (*AccessIntent, *FieldError) {
	const path = "accessIntent"
	o, err := asObject(raw)
	if err != nil {
		return nil, &FieldError{Field: path, Reason: "expected an object, got " + describe(raw)}
	}
	var ai AccessIntent
	var ferr *FieldError
	if ai.Surface, ferr = o.nonEmptyStr("surface", path+".surface"); ferr != nil {
		return nil, ferr
	}
	if ai.MatchValues, ferr = o.strings("matchValues", path+".matchValues"); ferr != nil {
		return nil, ferr
	}
	if raw, ok := o.get("boundaryValue"); ok && !isNull(raw) {
		s, ferr := rawString(raw, path+".boundaryValue")
		if ferr != nil {
			return nil, ferr
		}
		ai.BoundaryValue = &s
	}
	if ai.RequesterCwd, ferr = o.str("requesterCwd", path+".requesterCwd"); ferr != nil {
		return nil, ferr
	}
	principalRaw, ok := o.get("principal")
	if !ok {
		return nil, &FieldError{Field: path + ".principal", Reason: "missing, expected {sessionId, agentName}"}
	}
	p, err := asObject(principalRaw)
	if err != nil {
		return nil, &FieldError{Field: path + ".principal", Reason: "expected an object {sessionId, agentName}, got " + describe(principalRaw)}
	}
	if ai.Principal.SessionID, ferr = p.str("sessionId", path+".principal.sessionId"); ferr != nil {
		return nil, ferr
	}
	if ai.Principal.AgentName, ferr = p.str("agentName", path+".principal.agentName"); ferr != nil {
		return nil, ferr
	}
	if o.has("floor") {
		if ai.Floor, ferr = o.nonEmptyStr("floor", path+".floor"); ferr != nil {
			return nil, ferr
		}
	}
	if unitsRaw, ok := o.get("askingUnits"); ok {
		items, ok := arrayItems(unitsRaw)
		if !ok || len(items) == 0 {
			return nil, &FieldError{Field: path + ".askingUnits", Reason: "expected a non-empty array of {command, floor?}"}
		}
		ai.AskingUnits = make([]AskingUnit, len(items))
		for i, item := range items {
			u, err := asObject(item)
			if err != nil {
				return nil, &FieldError{Field: itemPath(path+".askingUnits", i), Reason: "expected an object {command, floor?}, got " + describe(item)}
			}
			if ai.AskingUnits[i].Command, ferr = u.str("command", ""); ferr != nil {
				return nil, ferr.at(itemPath(path+".askingUnits", i) + ".command")
			}
			if u.has("floor") {
				if ai.AskingUnits[i].Floor, ferr = u.nonEmptyStr("floor", ""); ferr != nil {
					return nil, ferr.at(itemPath(path+".askingUnits", i) + ".floor")
				}
			}
		}
	}
	return &ai, nil
}

// The wire shapes, in the member order pi writes.
type (
	requestWire struct {
		ID                 string          `json:"id"`
		CreatedAt          int64           `json:"createdAt"`
		RequesterSessionID string          `json:"requesterSessionId"`
		TargetSessionID    string          `json:"targetSessionId"`
		RequesterAgentName string          `json:"requesterAgentName"`
		Message            string          `json:"message,omitempty"`
		Payload            json.RawMessage `json:"payload,omitempty"`
		Source             RequestSource   `json:"source,omitempty"`
		Surface            string          `json:"surface,omitempty"`
		Value              string          `json:"value,omitempty"`
		SessionApproval    any             `json:"sessionApproval,omitempty"`
		AccessIntent       *intentWire     `json:"accessIntent,omitempty"`
		RequesterPID       int             `json:"requesterPid,omitempty"`
	}
	grantsWire struct {
		Grants []grantWire `json:"grants"`
	}
	grantWire struct {
		Surface string `json:"surface"`
		Pattern string `json:"pattern"`
	}
	legacyApprovalWire struct {
		Surface  string   `json:"surface"`
		Patterns []string `json:"patterns"`
	}
	intentWire struct {
		Surface       string        `json:"surface"`
		MatchValues   []string      `json:"matchValues"`
		BoundaryValue *string       `json:"boundaryValue"`
		RequesterCwd  string        `json:"requesterCwd"`
		Principal     principalWire `json:"principal"`
		Floor         string        `json:"floor,omitempty"`
		AskingUnits   []unitWire    `json:"askingUnits,omitempty"`
	}
	principalWire struct {
		SessionID string `json:"sessionId"`
		AgentName string `json:"agentName"`
	}
	unitWire struct {
		Command string `json:"command"`
		Floor   string `json:"floor,omitempty"`
	}
)

// EncodeRequest writes r as compact JSON in pi's member order. It refuses
// a request that its own reader would reject, so a child can never publish
// a file the broker must throw away.
//
// The bytes are those encoding/json writes for requestWire, but written by
// hand (appendRequestWire): a child encodes one request per process, and
// encoding/json's first use of these types, building their encoders by
// reflection, cost it 0.2-0.3 ms. A request the hand-written path does not
// cover (a payload that is not valid JSON) takes encoding/json's path, so
// its error is encoding/json's too.
func EncodeRequest(r Request) ([]byte, error) {
	w, err := requestWireOf(r)
	if err != nil {
		return nil, err
	}
	if data, ok := appendRequestWire(make([]byte, 0, 1024), &w); ok {
		return data, nil
	}
	return encodeCompact(w)
}

// requestWireOf checks r as EncodeRequest promises and gives its wire shape.
func requestWireOf(r Request) (requestWire, error) {
	if err := ValidateID(r.ID); err != nil {
		return requestWire{}, fmt.Errorf("encode request: %w", err)
	}
	if r.RequesterSessionID == "" || r.TargetSessionID == "" || r.RequesterAgentName == "" {
		return requestWire{}, fmt.Errorf("encode request %s: requester session, target session and agent name are required", r.ID)
	}
	w := requestWire{
		ID: r.ID, CreatedAt: r.CreatedAt,
		RequesterSessionID: r.RequesterSessionID, TargetSessionID: r.TargetSessionID,
		RequesterAgentName: r.RequesterAgentName, Message: r.Message,
		Payload: r.Payload, Source: r.Source, Surface: r.Surface, Value: r.Value,
		RequesterPID: r.RequesterPID,
	}
	if sa := r.SessionApproval; sa != nil && len(sa.Grants) > 0 {
		if sa.Legacy {
			lw := legacyApprovalWire{Surface: sa.Grants[0].Surface}
			for _, g := range sa.Grants {
				if g.Surface != lw.Surface {
					return requestWire{}, fmt.Errorf("encode request %s: the 20.x sessionApproval shape holds one surface, got %q and %q", r.ID, lw.Surface, g.Surface)
				}
				lw.Patterns = append(lw.Patterns, g.Pattern)
			}
			w.SessionApproval = lw
		} else {
			gw := grantsWire{Grants: make([]grantWire, len(sa.Grants))}
			for i, g := range sa.Grants {
				gw.Grants[i] = grantWire(g)
			}
			w.SessionApproval = gw
		}
	}
	if ai := r.AccessIntent; ai != nil {
		if ai.Surface == "" || len(ai.MatchValues) == 0 {
			return requestWire{}, fmt.Errorf("encode request %s: an access intent needs a surface and at least one match value", r.ID)
		}
		iw := &intentWire{
			Surface: ai.Surface, MatchValues: ai.MatchValues, BoundaryValue: ai.BoundaryValue,
			RequesterCwd: ai.RequesterCwd, Principal: principalWire(ai.Principal), Floor: ai.Floor,
		}
		for _, u := range ai.AskingUnits {
			iw.AskingUnits = append(iw.AskingUnits, unitWire(u))
		}
		w.AccessIntent = iw
	}
	return w, nil
}
