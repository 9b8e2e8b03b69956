package provenance

import "fmt"

// Describe names a decider for a human, hop by hop: "rule bash \"git *\"
// at session \"parent\"". The child's summary line and the agent hooks'
// denial messages both read it, so a decision reads the same everywhere.
func Describe(s Source) string {
	switch v := s.(type) {
	case Forwarded:
		at := "an unknown session"
		if v.ResponderSessionID != nil {
			at = fmt.Sprintf("session %q", *v.ResponderSessionID)
		}
		if v.Decision == nil {
			return at + " (which did not say who decided)"
		}
		return Describe(v.Decision) + " at " + at
	case User:
		return "the user"
	case Authorizer:
		return fmt.Sprintf("authorizer %q", v.Name)
	case Rule:
		return "rule " + ruleText(v.Surface, v.Pattern)
	case SessionApproval:
		return "a session grant " + ruleText(v.Surface, v.Pattern)
	case Yolo:
		return "yolo mode"
	case InfrastructureRead:
		return "the infrastructure-read allowance"
	case Unavailable:
		return "nobody (" + v.Reason + ")"
	case GateError:
		return "a failure (" + v.Reason + ")"
	}
	return "an unknown decider"
}

func ruleText(surface string, pattern *string) string {
	if pattern == nil {
		return surface
	}
	return fmt.Sprintf("%s %q", surface, *pattern)
}
