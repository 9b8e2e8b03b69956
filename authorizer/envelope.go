package authorizer

import "strings"

// excludedFamilies are the surfaces whose asks no link may allow: the
// families pi never delegates, with the directional members of each. A
// path decision is the operator's, made in rules or by a human.
var excludedFamilies = map[string]bool{
	"path":                     true,
	"path_read":                true,
	"path_write":               true,
	"external_directory":       true,
	"external_directory_read":  true,
	"external_directory_write": true,
}

// EnvelopeSurface is the surface the delegation envelope judges an ask
// by: the gate surface of its access facts, else its display surface (as
// pi does). It is empty when neither is known. An authorizer that keys its
// policy on a surface should use it too.
func EnvelopeSurface(ev Evidence) string {
	if ev.Access != nil && strings.TrimSpace(ev.Access.Surface) != "" {
		return ev.Access.Surface
	}
	return ev.Surface
}

// Delegable reports whether an authorizer's allow may stand on this ask:
// false when the surface family is path or external_directory, or the
// surface cannot be determined. The comparison ignores case and
// surrounding space, which can only exclude more.
func Delegable(ev Evidence) bool {
	s := strings.ToLower(strings.TrimSpace(EnvelopeSurface(ev)))
	return s != "" && !excludedFamilies[s]
}

// Envelope applies the delegation envelope to an authorizer's verdict: an
// allow on an ask that is not Delegable becomes a defer, and capped
// reports that it did. Deny and defer pass unchanged: the envelope only
// tightens.
func Envelope(v Verdict, ev Evidence) (out Verdict, capped bool) {
	if v.Kind == Allow && !Delegable(ev) {
		return Verdict{Kind: Defer}, true
	}
	return v, false
}
