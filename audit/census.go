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
// and forwarded_permission.nats_response_published when it says
// answeredEarlier: a broker killed after it wrote an answer and before it
// logged the decision leaves none, and the next broker's NATS bridge,
// publishing that answer, logs what it says was decided.
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
// by requestId (the forwarded request adopts the child's id) and by the
// request's digest, requestSha256, where a line has one: courier's broker
// and child write it on their decision lines, so an id used again (a child
// reusing ids across a broker's restart, issue 14) is another ask, counted
// again. A line without a digest (pi's lines, older courier logs, the
// child's permission_request lines) joins the ask of the latest line with
// a digest under its id, or the first one to come when none came yet; an
// id without any digest is one ask, as before digests.
//
// Each ask is counted once, from the most informative of its lines: one
// whose decidedBy decodes beats one without, and among those the one with
// the most forwarded frames wins, since the child's view contains the
// serving node's decider. The earliest line wins a tie. A terminal line
// without a requestId is counted on its own. pi 20.7.3 gave the child's and
// the parent's entries different ids, so one old forwarded ask may count
// twice; nothing in those lines allows a join.
//
// # Rotated logs
//
// courier rotates its log at a size cap, keeping one rotation at
// <log>.1 (package reviewlog). [CensusFile] reads the rotation first, then
// the log, as one census; older lines are gone. [Census] reads one stream
// as it is given.
//
// Each rotation starts the new file with a marker line
// (reviewlog.LogRotated) holding the size of the file it rotated away. A
// marker whose predecessor the census did not read, because fewer bytes
// came before it (since the start, or since the marker before it) than
// the file it follows held, says that the lines logged before its time
// are missing: the report lists it in RotatedAway, and the table says
// "history before T rotated away". After two rotations that is the
// marker heading <log>.1; a log read without its rotation, or a rotation
// cut short, shows it too (review finding 8: a flood rotated decisions
// away and the census gave no hint of loss). Lines are counted as the
// file holds them, line endings included; a marker without a size asks
// only that something came before it.
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
	"io/fs"
	"os"

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

// CensusFile is Census of the log at path and its rotation: <path>.1 when
// there is one, then path, as one census. Report.Files lists what was
// read, and a bad line names its file.
func CensusFile(path string) (Report, error) {
	c := newCounter()
	err := c.readFiles(path)
	return c.report(), err
}

// readFiles reads the log at path and its rotation, <path>.1 first.
func (c *counter) readFiles(path string) error {
	for _, p := range []string{path + reviewlog.RotatedSuffix, path} {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) && p != path {
			continue
		}
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		c.files = append(c.files, p)
		err = c.read(f, p, MaxLineBytes, readBufferSize)
		f.Close()
		if err != nil {
			return fmt.Errorf("audit: %s: %w", p, err)
		}
	}
	return nil
}

// census is Census with its limits as parameters, so tests and the fuzzer
// can reach the long-line paths with short inputs.
func census(r io.Reader, maxLine, bufSize int) (Report, error) {
	c := newCounter()
	if err := c.read(r, "", maxLine, bufSize); err != nil {
		return c.report(), fmt.Errorf("audit: %w", err)
	}
	return c.report(), nil
}

// read counts the lines of r, one file of the census.
func (c *counter) read(r io.Reader, file string, maxLine, bufSize int) error {
	lr := lineReader{br: bufio.NewReaderSize(r, bufSize), max: maxLine}
	for n := 1; ; n++ {
		before := lr.n
		line, tooLong, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read line %d: %w", n, err)
		}
		c.lines.Read++
		if tooLong {
			c.bad(file, n, fmt.Sprintf("longer than %d bytes", maxLine))
		} else {
			c.line(file, n, line)
		}
		// After c.line: a marker restarts the count at its own line.
		c.segment += lr.n - before
	}
}

type counter struct {
	lines       Lines
	badExamples []BadLine
	undecodable int
	files       []string
	byID        map[string]*asks
	anonymous   []decision
	// segment counts the bytes read since the start of the census or
	// the last rotation marker, that marker's line included: the file
	// the next marker follows, when it was read.
	segment     int64
	rotated     []RotatedAway
	rotatedMore int
	// shadow is the shadow report's bookkeeping (shadow.go), nil for a
	// census.
	shadow *shadowJoin
}

// asks are the decisions of one requestId: one per request digest, and
// the lines without a digest that came before any with one.
type asks struct {
	// early is the best of the digest-less lines seen before any line
	// with a digest; it joins the first digest's ask when one comes.
	early    decision
	hasEarly bool
	digests  []digestAsk
	// latest is the index in digests of the ask of the latest line with
	// a digest, which a later line without one joins.
	latest int
}

type digestAsk struct {
	digest string
	best   decision
}

// add joins d, a line of this id with digest (or ""), to its ask.
func (a *asks) add(digest string, d decision) {
	if digest == "" {
		if len(a.digests) == 0 {
			a.early, a.hasEarly = better(a.early, a.hasEarly, d), true
			return
		}
		g := &a.digests[a.latest]
		g.best = better(g.best, true, d)
		return
	}
	for i := range a.digests {
		if a.digests[i].digest == digest {
			a.digests[i].best = better(a.digests[i].best, true, d)
			a.latest = i
			return
		}
	}
	if len(a.digests) == 0 && a.hasEarly {
		d = better(a.early, true, d)
		a.hasEarly = false
	}
	a.digests = append(a.digests, digestAsk{digest: digest, best: d})
	a.latest = len(a.digests) - 1
}

// each calls fn with the decision of every ask of the id.
func (a *asks) each(fn func(decision)) {
	if a.hasEarly {
		fn(a.early)
	}
	for _, g := range a.digests {
		fn(g.best)
	}
}

// better returns the more informative of prev (when has) and d, the
// earlier one on a tie.
func better(prev decision, has bool, d decision) decision {
	if !has || d.rank > prev.rank {
		return d
	}
	return prev
}

func newCounter() *counter {
	return &counter{byID: make(map[string]*asks)}
}

func (c *counter) bad(file string, n int, reason string) {
	c.lines.Bad++
	if len(c.badExamples) < MaxBadLineExamples {
		c.badExamples = append(c.badExamples, BadLine{File: file, Line: n, Reason: reason})
	}
}

// line classifies one line. Fields are read one by one, so a field of the
// wrong type is ignored alone instead of spoiling the line, as courier's
// mailbox readers do.
func (c *counter) line(file string, n int, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		c.lines.Blank++
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			c.bad(file, n, "not a JSON object")
		} else {
			c.bad(file, n, "not JSON")
		}
		return
	}
	if m == nil {
		c.bad(file, n, "not a JSON object")
		return
	}
	var event string
	if json.Unmarshal(m["event"], &event) != nil || event == "" {
		c.bad(file, n, "no event name")
		return
	}
	c.lines.Entries++
	if event == reviewlog.LogRotated {
		c.marker(file, n, m)
		return
	}
	if c.shadow != nil {
		c.shadowEntry(event, m)
	}
	implied, terminal := terminalEvents[event]
	if !terminal && event == reviewlog.NATSResponsePublished {
		// The publication of an answer an earlier run left: that run
		// may have been killed before it logged the decision, which the
		// entry then carries (joined by requestId, so not counted twice).
		var earlier bool
		terminal = json.Unmarshal(m["answeredEarlier"], &earlier) == nil && earlier
	}
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
	var digest string
	if json.Unmarshal(m[reviewlog.KeyRequestSHA256], &digest) != nil {
		digest = ""
	}
	a := c.byID[id]
	if a == nil {
		a = &asks{}
		c.byID[id] = a
	}
	a.add(digest, d)
	if c.shadow != nil {
		c.shadowJoined(id, a)
	}
}

// marker reads a rotation marker: when fewer bytes came before it than
// the file it rotated away held, that file was not read, and the lines
// before the marker's time are missing.
func (c *counter) marker(file string, n int, m map[string]json.RawMessage) {
	var previous int64
	if json.Unmarshal(m[reviewlog.KeyPreviousSize], &previous) != nil || previous < 1 {
		previous = 1
	}
	read := c.segment >= previous
	c.segment = 0
	if read {
		return
	}
	var at string
	if json.Unmarshal(m["timestamp"], &at) != nil {
		at = ""
	}
	if len(c.rotated) == MaxBadLineExamples {
		c.rotatedMore++
		return
	}
	c.rotated = append(c.rotated, RotatedAway{Before: at, File: file, Line: n, PreviousSize: previous})
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
	// n counts the bytes read, line endings included.
	n int64
}

func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	lr.buf = lr.buf[:0]
	read := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		lr.n += int64(len(chunk))
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
