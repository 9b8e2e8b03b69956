package reviewlog

// What a request asked, as the serving node's entries about it record it
// (issue 16: the log said who decided, never what): the surface, the
// value, the bash units and the requester's working directory. The agent
// is there already, as requesterAgentName.

// The detail keys of [Asked], which readers (package audit's listing)
// look for.
const (
	// KeySurface holds the surface asked: the access facts' surface, else
	// the request's display surface.
	KeySurface = "surface"
	// KeyValue holds the value asked as the operator is shown it: the
	// request's display value, else its first match value.
	KeyValue = "value"
	// KeyUnits holds, on bash, the units of the command line the rules
	// judged, a list of strings.
	KeyUnits = "units"
	// KeyRequesterCwd holds the requester's working directory
	// (accessIntent.requesterCwd).
	KeyRequesterCwd = "requesterCwd"
	// KeyRequesterAgentName holds the agent that asked.
	KeyRequesterAgentName = "requesterAgentName"
)

// Asked is what a request asked, as the serving node's decision entries
// ([ForwardedAutoApprovedEntry], [ForwardedApprovedEntry] and their
// denying twins) and [ForwardedPromptedEntry] record it. Every field is
// the child's text, so untrusted: each is written as a JSON string (or a
// list of them), escaped and cut to the field width like every other
// string of the line. A field left empty writes no key, so a line says
// only what is known, and a reader tells an old line (no key) from an
// empty value.
//
// Keys: requesterCwd, surface, units, value, each in its place in the
// byte order of the entry's keys.
type Asked struct {
	// Surface is the surface asked ([KeySurface]).
	Surface string
	// Value is the value asked as shown ([KeyValue]).
	Value string
	// Units are the bash units the rules judged, in source order
	// ([KeyUnits]); nil off bash. bashunits.MaxUnits bounds them per
	// command line.
	Units []string
	// Cwd is the requester's working directory ([KeyRequesterCwd]).
	Cwd string
}

// servedAsk appends the keys every serving-side entry about a request
// ends with, as servedRequest does, with what was asked in their places:
// requestId, requestPath, requestSha256 (when known), requesterAgentName,
// requesterCwd, requesterSessionId, source, surface, targetSessionId,
// units and value (each of a's when set).
func (d details) servedAsk(id, path string, p Parties, a Asked) {
	d.str(KeyRequestID, id)
	d.str("requestPath", path)
	d.strIfSet(KeyRequestSHA256, p.RequestSHA256)
	d.str(KeyRequesterAgentName, p.RequesterAgentName)
	d.strIfSet(KeyRequesterCwd, a.Cwd)
	d.str("requesterSessionId", p.RequesterSessionID)
	d.uid(KeyRequesterUID, p.RequesterUID)
	d.str("source", source)
	d.strIfSet(KeySurface, a.Surface)
	d.str("targetSessionId", p.TargetSessionID)
	d.askedTail(a)
}

// askedTail appends the keys of a that sort after targetSessionId: units
// (when set) and value (when set).
func (d details) askedTail(a Asked) {
	if a.Units != nil {
		d.strs(KeyUnits, a.Units)
	}
	d.strIfSet(KeyValue, a.Value)
}
