// Package audit reads a review log and counts who decided: the census behind
// `broker audit`. It reads courier's logs and pi-permission-system's (both
// the 25.x lines that carry decidedBy and the 20.7.3 lines that do not),
// because both use the same event names.
//
// # Terminal decisions
//
// A line counts as a decision when its event records the final outcome of
// an ask on the node that wrote it:
//
//	permission_request.approved                 forwarded_permission.auto_approved
//	permission_request.denied                   forwarded_permission.auto_denied
//	permission_request.blocked                  forwarded_permission.approved
//	permission_request.session_approved         forwarded_permission.denied
//	permission_request.auto_approved            forwarded_permission.response_received
//	permission_request.infrastructure_auto_allowed  forwarded_permission.response_timed_out
//	permission_request.gate_error               forwarded_permission.no_serving_session
//
// Everything else (waiting, prompted, request_created, session_recorded,
// serving_*, relay_*, chain and link events, warnings and errors) describes
// an ask on its way and is read but not counted.
//
// # One ask, one count
//
// One ask often leaves several terminal lines in one file: a child and its
// parent may share a log, the serving node writes forwarded_permission.approved
// and its prompter permission_request.approved, and the child writes
// response_received and its own permission_request.approved. Lines are joined
// by requestId (the forwarded request adopts the child's id) and each id is
// counted once, from the most informative of its lines: one whose decidedBy
// decodes beats one without, and among those the one with the most forwarded
// frames wins, since the child's view contains the serving node's decider.
// The earliest line wins a tie. A terminal line without a requestId is
// counted on its own. pi 20.7.3 gave the child's and the parent's entries
// different ids, so one old forwarded ask may count twice; nothing in those
// lines allows a join.
//
// # Deciders
//
// A decision is counted under its effective decider, the innermost one
// under any forwarded frames: user, each authorizer link by name, rule,
// session approval, yolo, infrastructure read, unavailable and gate error.
// A decision that was forwarded is counted a second time in a separate
// forwarded row. "No decider recorded" collects lines with no decidedBy
// (pi 20.7.3 and older), a decidedBy that does not decode, and a forwarded
// frame whose responder sent none.
//
// The outcome is the line's approved boolean when it has one, else the one
// its event name implies, else its state or resolution. A line that states
// none counts as a decision in neither the approved nor the denied column.
//
// # Bad lines
//
// A line that is not JSON, not an object, has no event name, or is longer
// than MaxLineBytes is counted and reported by number, and reading goes on:
// a log torn by a full disk or a crash is still worth a census. Memory stays
// bounded by MaxLineBytes however long a line is.
package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
)

// MaxLineBytes caps one log line. pi caps every field at 1000 characters
// and a real decision line averages under 1 KiB, so a longer line is damage
// or a hostile file, and holding it would only cost memory.
const MaxLineBytes = 1 << 20

// MaxBadLineExamples is how many bad lines a report lists by number; the
// count covers them all.
const MaxBadLineExamples = 5

// readBufferSize is the read-ahead; a line longer than it is assembled from
// several reads.
const readBufferSize = 64 << 10

// NoDecider is the Row.Decider of decisions whose line names no decider.
const NoDecider = "none"

// ReportVersion is Report.Version. It changes only if a field changes
// meaning or disappears; added fields do not change it.
const ReportVersion = 1

// outcome is what a terminal line says happened.
type outcome int

const (
	outcomeUnknown outcome = iota
	outcomeApproved
	outcomeDenied
)

// terminalEvents maps each terminal event to the outcome its name implies.
// response_received implies none: it carries the answer in its fields.
var terminalEvents = map[string]outcome{
	reviewlog.RequestApproved:                  outcomeApproved,
	reviewlog.RequestDenied:                    outcomeDenied,
	reviewlog.RequestBlocked:                   outcomeDenied,
	reviewlog.RequestSessionApproved:           outcomeApproved,
	reviewlog.RequestAutoApproved:              outcomeApproved,
	reviewlog.RequestInfrastructureAutoAllowed: outcomeApproved,
	reviewlog.RequestGateError:                 outcomeDenied,
	reviewlog.ForwardedAutoApproved:            outcomeApproved,
	reviewlog.ForwardedAutoDenied:              outcomeDenied,
	reviewlog.ForwardedApproved:                outcomeApproved,
	reviewlog.ForwardedDenied:                  outcomeDenied,
	reviewlog.ForwardedResponseReceived:        outcomeUnknown,
	reviewlog.ForwardedResponseTimedOut:        outcomeDenied,
	reviewlog.ForwardedNoServingSession:        outcomeDenied,
}

// statedOutcomes reads the wire states and pi's resolutions, for lines whose
// event name does not settle the outcome.
var statedOutcomes = map[string]outcome{
	"approved":                     outcomeApproved,
	"approved_for_session":         outcomeApproved,
	"approved_for_serving_session": outcomeApproved,
	"denied":                       outcomeDenied,
	"denied_with_reason":           outcomeDenied,
	"user_approved":                outcomeApproved,
	"user_approved_for_session":    outcomeApproved,
	"user_denied":                  outcomeDenied,
	"policy_allow":                 outcomeApproved,
	"policy_deny":                  outcomeDenied,
	"policy_denied":                outcomeDenied,
	"session_approved":             outcomeApproved,
	"auto_approved":                outcomeApproved,
	"infrastructure_auto_allowed":  outcomeApproved,
	"authorizer_allowed":           outcomeApproved,
	"authorizer_denied":            outcomeDenied,
	"confirmation_unavailable":     outcomeDenied,
	"gate_error":                   outcomeDenied,
}

// decider identifies a census row.
type decider struct {
	kind string // a provenance.Kind, or NoDecider
	name string // the link name, for authorizers only
}

// decision is what one terminal line contributes, and how much it knows.
type decision struct {
	decider   decider
	forwarded bool
	outcome   outcome
	// rank orders lines of one requestId: 0 without a decodable decidedBy,
	// else 1 + the number of forwarded frames.
	rank int
}

// Census reads a review log to its end and counts its terminal decisions.
// Bad lines are counted, never fatal; the error is only ever a read error
// of r, returned with the report of what was read before it.
func Census(r io.Reader) (Report, error) {
	return census(r, MaxLineBytes, readBufferSize)
}

// census is Census with its limits as parameters, so tests and the fuzzer
// can reach the long-line paths with short inputs.
func census(r io.Reader, maxLine, bufSize int) (Report, error) {
	c := newCounter()
	lr := lineReader{br: bufio.NewReaderSize(r, bufSize), max: maxLine}
	for n := 1; ; n++ {
		line, tooLong, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return c.report(), fmt.Errorf("audit: read line %d: %w", n, err)
		}
		c.lines.Read++
		if tooLong {
			c.bad(n, fmt.Sprintf("longer than %d bytes", maxLine))
			continue
		}
		c.line(n, line)
	}
	return c.report(), nil
}

type counter struct {
	lines       Lines
	badExamples []BadLine
	undecodable int
	byID        map[string]decision
	anonymous   []decision
}

func newCounter() *counter {
	return &counter{byID: make(map[string]decision)}
}

func (c *counter) bad(n int, reason string) {
	c.lines.Bad++
	if len(c.badExamples) < MaxBadLineExamples {
		c.badExamples = append(c.badExamples, BadLine{Line: n, Reason: reason})
	}
}

// line classifies one line. Fields are read one by one, so a field of the
// wrong type is ignored alone instead of spoiling the line, as courier's
// mailbox readers do.
func (c *counter) line(n int, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		c.lines.Blank++
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			c.bad(n, "not a JSON object")
		} else {
			c.bad(n, "not JSON")
		}
		return
	}
	if m == nil {
		c.bad(n, "not a JSON object")
		return
	}
	var event string
	if json.Unmarshal(m["event"], &event) != nil || event == "" {
		c.bad(n, "no event name")
		return
	}
	c.lines.Entries++
	implied, terminal := terminalEvents[event]
	if !terminal {
		return
	}
	c.lines.Terminal++

	d := decision{decider: decider{kind: NoDecider}, outcome: lineOutcome(m, implied)}
	if raw, ok := m[reviewlog.KeyDecidedBy]; ok && !isNull(raw) {
		if src, ok := provenance.Decode(raw); ok {
			d.rank = 1 + provenance.Depth(src)
			d.forwarded = provenance.Depth(src) > 0
			d.decider = deciderOf(provenance.Effective(src))
		} else {
			c.undecodable++
		}
	}

	var id string
	if json.Unmarshal(m[reviewlog.KeyRequestID], &id) != nil || id == "" {
		c.anonymous = append(c.anonymous, d)
		return
	}
	if prev, seen := c.byID[id]; !seen || d.rank > prev.rank {
		c.byID[id] = d
	}
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

// lineOutcome prefers what the line states over what its event implies: an
// approved boolean is the decision itself, an event name only its usual
// meaning.
func lineOutcome(m map[string]json.RawMessage, implied outcome) outcome {
	var approved bool
	if json.Unmarshal(m[reviewlog.KeyApproved], &approved) == nil && !isNull(m[reviewlog.KeyApproved]) {
		if approved {
			return outcomeApproved
		}
		return outcomeDenied
	}
	if implied != outcomeUnknown {
		return implied
	}
	for _, key := range []string{reviewlog.KeyState, reviewlog.KeyResolution} {
		var s string
		if json.Unmarshal(m[key], &s) == nil {
			if o, ok := statedOutcomes[s]; ok {
				return o
			}
		}
	}
	return outcomeUnknown
}

// deciderOf names the row of an effective decider. A nil decider is a
// forwarded frame whose responder sent none.
func deciderOf(s provenance.Source) decider {
	if s == nil {
		return decider{kind: NoDecider}
	}
	if a, ok := s.(provenance.Authorizer); ok {
		return decider{kind: string(provenance.KindAuthorizer), name: a.Name}
	}
	return decider{kind: string(s.Kind())}
}

// lineReader yields lines without their line ending. A line longer than max
// is reported as too long and skipped to its newline without being held, so
// memory stays near max whatever the input.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	read := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		read = read || len(chunk) > 0
		if !tooLong && len(lr.buf)+len(chunk) > lr.max+len("\r\n") {
			tooLong = true
			lr.buf = lr.buf[:0]
		}
		if !tooLong {
			lr.buf = append(lr.buf, chunk...)
		}
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if !read {
				return nil, false, io.EOF
			}
		default:
			return nil, false, err
		}
		break
	}
	line = bytes.TrimSuffix(lr.buf, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if len(line) > lr.max {
		tooLong = true
	}
	return line, tooLong, nil
}
