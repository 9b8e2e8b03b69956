package decision

import "github.com/seed6639df8c/courier/provenance"

// Summary is the one-line human reading of d: what was decided, by whom
// (provenance.Describe) and why, e.g. `denied by rule bash "npm *" at
// session "parent": Use pnpm instead`, or `unavailable: <reason>` when
// nobody could answer. child ask prints it on stderr; the agent hooks put
// it in a denial's message.
func (d Decision) Summary() string {
	var verb string
	switch {
	case d.State == StateApprovedForSession:
		verb = "allowed for this session"
	case d.Approved():
		verb = "allowed"
	case d.Unavailable():
		return "unavailable: " + d.DenialReason
	default:
		verb = "denied"
	}
	line := verb + " by " + provenance.Describe(d.DecidedBy)
	if d.DenialReason != "" {
		line += ": " + d.DenialReason
	}
	return line
}
