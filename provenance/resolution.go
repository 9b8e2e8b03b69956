package provenance

// Resolution is the review log's summary of how a decision was reached,
// pi's `resolution` value.
type Resolution string

// The resolutions of pi's decision-resolution table (pinned in source_test.go).
const (
	ResolutionPolicyAllow               Resolution = "policy_allow"
	ResolutionPolicyDeny                Resolution = "policy_deny"
	ResolutionSessionApproved           Resolution = "session_approved"
	ResolutionInfrastructureAutoAllowed Resolution = "infrastructure_auto_allowed"
	ResolutionAutoApproved              Resolution = "auto_approved"
	ResolutionAuthorizerAllowed         Resolution = "authorizer_allowed"
	ResolutionAuthorizerDenied          Resolution = "authorizer_denied"
	ResolutionConfirmationUnavailable   Resolution = "confirmation_unavailable"
	ResolutionGateError                 Resolution = "gate_error"
	ResolutionUserApproved              Resolution = "user_approved"
	ResolutionUserApprovedForSession    Resolution = "user_approved_for_session"
	ResolutionUserDenied                Resolution = "user_denied"
)

// Outcome is what a decision did, as far as the resolution cares: allowed
// once, allowed for the session, or denied.
type Outcome int

// The outcomes a resolution distinguishes.
const (
	OutcomeDenied Outcome = iota
	OutcomeApproved
	OutcomeApprovedForSession
)

// ResolutionFor maps a decision's effective decider and outcome to its
// resolution. A human, and a forwarded decision whose responder named no
// decider (or a nil source), resolve as the user's answer, as pi does.
func ResolutionFor(s Source, outcome Outcome) Resolution {
	switch d := Effective(s).(type) {
	case Rule:
		if outcome == OutcomeDenied {
			return ResolutionPolicyDeny
		}
		return ResolutionPolicyAllow
	case SessionApproval:
		return ResolutionSessionApproved
	case InfrastructureRead:
		return ResolutionInfrastructureAutoAllowed
	case Yolo:
		return ResolutionAutoApproved
	case Authorizer:
		if d.Verdict == VerdictAllow {
			return ResolutionAuthorizerAllowed
		}
		return ResolutionAuthorizerDenied
	case Unavailable:
		return ResolutionConfirmationUnavailable
	case GateError:
		return ResolutionGateError
	}
	switch outcome {
	case OutcomeApproved:
		return ResolutionUserApproved
	case OutcomeApprovedForSession:
		return ResolutionUserApprovedForSession
	}
	return ResolutionUserDenied
}
