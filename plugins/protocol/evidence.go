package protocol

import (
	"encoding/json"
	"strings"

	"github.com/seed6639df8c/courier/authorizer"
	pb "github.com/seed6639df8c/courier/plugins/gen/courier/authorizer/v1"
)

// EncodeEvidence is ev on the wire. Protobuf strings must be UTF-8, and a
// child's bytes need not be: invalid sequences become U+FFFD, so that a
// hostile request cannot make the call fail (and so pick the link's
// failure verdict).
func EncodeEvidence(ev authorizer.Evidence) *pb.Evidence {
	out := &pb.Evidence{
		RequestId:      validUTF8(ev.RequestID),
		Source:         validUTF8(ev.Source),
		DisplaySurface: validUTF8(ev.Surface),
		DisplayValue:   validUTF8(ev.Value),
		Message:        validUTF8(ev.Message),
		Forwarding: &pb.Forwarding{
			RequesterAgentName: validUTF8(ev.Forwarding.RequesterAgentName),
			RequesterSessionId: validUTF8(ev.Forwarding.RequesterSessionID),
		},
		PayloadJson: validUTF8(string(ev.Payload)),
	}
	if a := ev.Access; a != nil {
		facts := &pb.AccessFacts{
			Surface:     validUTF8(a.Surface),
			MatchValues: validUTF8s(a.MatchValues),
			Floor:       validUTF8(a.Floor),
		}
		if a.BoundaryValue != nil {
			b := validUTF8(*a.BoundaryValue)
			facts.BoundaryValue = &b
		}
		for _, u := range a.AskingUnits {
			facts.AskingUnits = append(facts.AskingUnits, &pb.AskingUnit{Command: validUTF8(u.Command), Floor: validUTF8(u.Floor)})
		}
		out.Access = facts
	}
	if len(ev.SessionApproval) > 0 {
		sa := &pb.SessionApproval{}
		for _, g := range ev.SessionApproval {
			sa.Grants = append(sa.Grants, &pb.Grant{Surface: validUTF8(g.Surface), Pattern: validUTF8(g.Pattern)})
		}
		out.SessionApproval = sa
	}
	if b := ev.Bash; b != nil {
		out.Bash = &pb.BashInput{Complete: validUTF8(b.Complete), Triggering: validUTF8s(b.Triggering)}
	}
	if ev.RequesterCwd != nil || ev.Principal != nil || ev.Conversation != nil {
		d := &pb.Disclosure{}
		if ev.RequesterCwd != nil {
			cwd := validUTF8(*ev.RequesterCwd)
			d.RequesterCwd = &cwd
		}
		if p := ev.Principal; p != nil {
			d.Principal = &pb.Principal{SessionId: validUTF8(p.SessionID), AgentName: validUTF8(p.AgentName)}
		}
		if c := ev.Conversation; c != nil {
			conv := &pb.Conversation{Forwarded: c.Forwarded, RequesterAgent: validUTF8(c.RequesterAgent)}
			for _, it := range c.Items {
				conv.Items = append(conv.Items, &pb.ConversationItem{Role: validUTF8(it.Role), Text: validUTF8(it.Text), Derived: it.Derived})
			}
			d.Conversation = conv
		}
		out.Disclosure = d
	}
	return out
}

// DecodeEvidence reads evidence on the plugin side. A nil message reads
// as empty evidence; a payload that is not valid JSON is dropped, so an
// author can always hand Payload to json.Unmarshal.
func DecodeEvidence(in *pb.Evidence) authorizer.Evidence {
	ev := authorizer.Evidence{
		RequestID: in.GetRequestId(),
		Source:    in.GetSource(),
		Surface:   in.GetDisplaySurface(),
		Value:     in.GetDisplayValue(),
		Message:   in.GetMessage(),
		Forwarding: authorizer.Forwarding{
			RequesterAgentName: in.GetForwarding().GetRequesterAgentName(),
			RequesterSessionID: in.GetForwarding().GetRequesterSessionId(),
		},
	}
	if p := in.GetPayloadJson(); p != "" && json.Valid([]byte(p)) {
		ev.Payload = json.RawMessage(p)
	}
	if a := in.GetAccess(); a != nil {
		facts := &authorizer.AccessFacts{
			Surface:     a.GetSurface(),
			MatchValues: a.GetMatchValues(),
			Floor:       a.GetFloor(),
		}
		if a.BoundaryValue != nil {
			b := a.GetBoundaryValue()
			facts.BoundaryValue = &b
		}
		for _, u := range a.GetAskingUnits() {
			facts.AskingUnits = append(facts.AskingUnits, authorizer.AskingUnit{Command: u.GetCommand(), Floor: u.GetFloor()})
		}
		ev.Access = facts
	}
	for _, g := range in.GetSessionApproval().GetGrants() {
		ev.SessionApproval = append(ev.SessionApproval, authorizer.SuggestedGrant{Surface: g.GetSurface(), Pattern: g.GetPattern()})
	}
	if b := in.GetBash(); b != nil {
		// Triggering is never nil: "no unit asked" reads as an empty
		// list, as the broker's own Evidence has it.
		ev.Bash = &authorizer.BashInput{Complete: b.GetComplete(), Triggering: append([]string{}, b.GetTriggering()...)}
	}
	if d := in.GetDisclosure(); d != nil {
		if d.RequesterCwd != nil {
			cwd := d.GetRequesterCwd()
			ev.RequesterCwd = &cwd
		}
		if p := d.GetPrincipal(); p != nil {
			ev.Principal = &authorizer.Principal{SessionID: p.GetSessionId(), AgentName: p.GetAgentName()}
		}
		if c := d.GetConversation(); c != nil {
			conv := &authorizer.Conversation{Forwarded: c.GetForwarded(), RequesterAgent: c.GetRequesterAgent()}
			for _, it := range c.GetItems() {
				conv.Items = append(conv.Items, authorizer.ConversationItem{Role: it.GetRole(), Text: it.GetText(), Derived: it.GetDerived()})
			}
			ev.Conversation = conv
		}
	}
	return ev
}

func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

func validUTF8s(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = validUTF8(s)
	}
	return out
}
