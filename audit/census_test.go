package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func censusFile(t *testing.T, path string) Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := Census(f)
	if err != nil {
		t.Fatalf("Census: %v", err)
	}
	return r
}

// TestCensusPiFixture pins the census of a shared pi log: 25.x lines with
// decidedBy seen from one, two and three nodes, 20.7.3 lines without it,
// non-terminal lines, and bad lines. The counts are written out here, not
// only in the golden files, so a regenerated golden cannot quietly change
// them.
func TestCensusPiFixture(t *testing.T) {
	got := censusFile(t, filepath.Join("testdata", "pi-review.jsonl"))

	want := Report{
		Version: ReportVersion,
		Deciders: []Row{
			// perm-a1 (approved, seen from both nodes: 4 terminal lines),
			// perm-i11 (denied), perm-j12 (approved).
			{Decider: "user", Counts: Counts{Decisions: 3, Approved: 2, Denied: 1}},
			// perm-c4, forwarded.
			{Decider: "authorizer", Name: "bash-judge", Counts: Counts{Decisions: 1, Approved: 1}},
			// perm-c3.
			{Decider: "authorizer", Name: "model-judge", Counts: Counts{Decisions: 1, Denied: 1}},
			// perm-b2 (approved on the serving node), perm-d5 (denied two
			// hops up: 5 terminal lines).
			{Decider: "rule", Counts: Counts{Decisions: 2, Approved: 1, Denied: 1}},
			{Decider: "session_approval", Counts: Counts{Decisions: 1, Approved: 1}},
			{Decider: "yolo", Counts: Counts{Decisions: 1, Approved: 1}},
			{Decider: "infrastructure_read", Counts: Counts{Decisions: 1, Approved: 1}},
			// perm-f7: no_serving_session (no decidedBy) loses to the
			// permission_request.denied that names the decider.
			{Decider: "unavailable", Counts: Counts{Decisions: 1, Denied: 1}},
			// perm-g8 on the serving node, perm-g9 locally.
			{Decider: "gate_error", Counts: Counts{Decisions: 2, Denied: 2}},
			// call_legacy1 (approved); 1796031854191-… auto_approved and
			// response_received joined (approved); 1796031900000-… timed
			// out (denied); a blocked line with no requestId (denied);
			// perm-k13 forwarded from a parent that sent no decider
			// (approved); perm-m15 with an unknown kind (approved).
			{Decider: NoDecider, Counts: Counts{Decisions: 6, Approved: 4, Denied: 2}},
		},
		// perm-a1, perm-c4, perm-d5, perm-k13.
		Forwarded: Counts{Decisions: 4, Approved: 3, Denied: 1},
		Total:     Counts{Decisions: 19, Approved: 11, Denied: 8},
		Lines:     Lines{Read: 54, Blank: 1, Bad: 4, Entries: 49, Terminal: 30},
		BadLines: []BadLine{
			{Line: 51, Reason: "not JSON"},
			{Line: 52, Reason: "not a JSON object"},
			{Line: 53, Reason: "not JSON"},
			{Line: 54, Reason: "no event name"},
		},
		UndecodableDecidedBy: 1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("census:\n got %+v\nwant %+v", got, want)
	}

	var table, js bytes.Buffer
	if err := got.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := got.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "pi-review.table.golden"), table.Bytes())
	golden(t, filepath.Join("testdata", "pi-review.json.golden"), js.Bytes())

	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, got) {
		t.Errorf("JSON report does not round-trip:\n got %+v\nwant %+v", back, got)
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run go test -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// line builds a review line from alternating keys and values.
func line(event string, kv ...any) string {
	m := map[string]any{"timestamp": "2026-10-01T12:00:00.000Z", "extension": "pi-permission-system", "stream": "review", "event": event}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func row(r Report, decider, name string) Counts {
	for _, d := range r.Deciders {
		if d.Decider == decider && d.Name == name {
			return d.Counts
		}
	}
	return Counts{}
}

func TestCensusJoinAndOutcome(t *testing.T) {
	user := json.RawMessage(`{"kind":"user","via":"dialog"}`)
	rule := json.RawMessage(`{"kind":"rule","surface":"bash","pattern":null,"origin":null}`)
	fwdUser := json.RawMessage(`{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"user","via":"dialog"}}`)
	fwdFwdRule := json.RawMessage(`{"kind":"forwarded","responderSessionId":"m","decision":{"kind":"forwarded","responderSessionId":"g","decision":{"kind":"rule","surface":"bash","pattern":null,"origin":null}}}`)

	type cell struct {
		decider, name string
		counts        Counts
	}
	tests := []struct {
		name      string
		lines     []string
		want      []cell
		forwarded Counts
		total     Counts
	}{
		{
			name: "decodable beats absent, whichever comes first",
			lines: []string{
				line(reviewlog.ForwardedResponseTimedOut, "requestId", "r1"),
				line(reviewlog.RequestDenied, "requestId", "r1", "decidedBy", json.RawMessage(`{"kind":"unavailable","reason":"timeout"}`)),
				line(reviewlog.RequestDenied, "requestId", "r2", "decidedBy", json.RawMessage(`{"kind":"unavailable","reason":"gone"}`)),
				line(reviewlog.ForwardedNoServingSession, "requestId", "r2"),
			},
			want:  []cell{{"unavailable", "", Counts{2, 0, 2}}, {NoDecider, "", Counts{}}},
			total: Counts{2, 0, 2},
		},
		{
			name: "deeper forwarding beats shallower, whichever comes first",
			lines: []string{
				line(reviewlog.RequestApproved, "requestId", "r1", "decidedBy", fwdUser),
				line(reviewlog.RequestApproved, "requestId", "r1", "decidedBy", user),
				line(reviewlog.ForwardedAutoDenied, "requestId", "r2", "decidedBy", rule),
				line(reviewlog.RequestDenied, "requestId", "r2", "decidedBy", fwdFwdRule),
			},
			want:      []cell{{"user", "", Counts{1, 1, 0}}, {"rule", "", Counts{1, 0, 1}}},
			forwarded: Counts{2, 1, 1},
			total:     Counts{2, 1, 1},
		},
		{
			name: "the earliest line wins a tie",
			lines: []string{
				line(reviewlog.ForwardedApproved, "requestId", "r1", "decidedBy", user),
				line(reviewlog.ForwardedDenied, "requestId", "r1", "decidedBy", rule),
			},
			want:  []cell{{"user", "", Counts{1, 1, 0}}, {"rule", "", Counts{}}},
			total: Counts{1, 1, 0},
		},
		{
			name: "lines without a requestId count one by one",
			lines: []string{
				line(reviewlog.RequestBlocked),
				line(reviewlog.RequestBlocked),
				line(reviewlog.RequestBlocked, "requestId", ""),
				line(reviewlog.RequestBlocked, "requestId", 7),
			},
			want:  []cell{{NoDecider, "", Counts{4, 0, 4}}},
			total: Counts{4, 0, 4},
		},
		{
			name: "the approved boolean beats the event name",
			lines: []string{
				line(reviewlog.RequestApproved, "requestId", "r1", "approved", false),
				line(reviewlog.RequestDenied, "requestId", "r2", "approved", true),
				line(reviewlog.RequestDenied, "requestId", "r3", "approved", nil),
				line(reviewlog.RequestDenied, "requestId", "r4", "approved", "yes"),
			},
			want:  []cell{{NoDecider, "", Counts{4, 1, 3}}},
			total: Counts{4, 1, 3},
		},
		{
			name: "response_received without approved reads state, then resolution",
			lines: []string{
				line(reviewlog.ForwardedResponseReceived, "requestId", "r1", "state", "approved_for_session"),
				line(reviewlog.ForwardedResponseReceived, "requestId", "r2", "state", "denied_with_reason"),
				line(reviewlog.ForwardedResponseReceived, "requestId", "r3", "resolution", "user_denied"),
				line(reviewlog.ForwardedResponseReceived, "requestId", "r4", "state", "pondering"),
				line(reviewlog.ForwardedResponseReceived, "requestId", "r5"),
			},
			want:  []cell{{NoDecider, "", Counts{5, 1, 2}}},
			total: Counts{5, 1, 2},
		},
		{
			name: "forwarded with a null decision has no decider but was forwarded",
			lines: []string{
				line(reviewlog.ForwardedResponseReceived, "requestId", "r1", "approved", true,
					"decidedBy", json.RawMessage(`{"kind":"forwarded","responderSessionId":null,"decision":null}`)),
			},
			want:      []cell{{NoDecider, "", Counts{1, 1, 0}}},
			forwarded: Counts{1, 1, 0},
			total:     Counts{1, 1, 0},
		},
		{
			name: "authorizers get a row each, by name",
			lines: []string{
				line(reviewlog.RequestDenied, "requestId", "r1", "decidedBy", json.RawMessage(`{"kind":"authorizer","name":"zeta","verdict":"deny","reason":"no"}`)),
				line(reviewlog.RequestApproved, "requestId", "r2", "decidedBy", json.RawMessage(`{"kind":"authorizer","name":"alpha","verdict":"allow","reason":null}`)),
				line(reviewlog.RequestApproved, "requestId", "r3", "decidedBy", json.RawMessage(`{"kind":"authorizer","name":"alpha","verdict":"allow","reason":null}`)),
			},
			want:  []cell{{"authorizer", "alpha", Counts{2, 2, 0}}, {"authorizer", "zeta", Counts{1, 0, 1}}},
			total: Counts{3, 2, 1},
		},
		{
			name: "an earlier run's answer, published over NATS, is the decision no line logged, and is not counted twice",
			lines: []string{
				line(reviewlog.NATSResponsePublished, "requestId", "r1", "answeredEarlier", true, "resolution", "denied_with_reason", "decidedBy", rule),
				line(reviewlog.ForwardedAutoApproved, "requestId", "r2", "decidedBy", rule),
				line(reviewlog.NATSResponsePublished, "requestId", "r2", "answeredEarlier", true, "resolution", "approved", "decidedBy", rule),
				line(reviewlog.NATSResponsePublished, "requestId", "r3"),
			},
			want:  []cell{{"rule", "", Counts{2, 1, 1}}},
			total: Counts{2, 1, 1},
		},
		{
			name: "non-terminal lines are read, not counted",
			lines: []string{
				line(reviewlog.RequestWaiting, "requestId", "r1", "decidedBy", user),
				line(reviewlog.ForwardedPrompted, "requestId", "r1"),
				line(reviewlog.ForwardedSessionRecorded, "requestId", "r1"),
				line(reviewlog.ChainResolved, "requestId", "r1"),
				line(reviewlog.LinkShadow, "requestId", "r1"),
				line(reviewlog.ForwardingWarning),
			},
			want:  []cell{{"user", "", Counts{}}},
			total: Counts{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Census(strings.NewReader(strings.Join(tt.lines, "\n") + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tt.want {
				if got := row(r, c.decider, c.name); got != c.counts {
					t.Errorf("%s %q: %+v, want %+v", c.decider, c.name, got, c.counts)
				}
			}
			if r.Forwarded != tt.forwarded {
				t.Errorf("forwarded %+v, want %+v", r.Forwarded, tt.forwarded)
			}
			if r.Total != tt.total {
				t.Errorf("total %+v, want %+v", r.Total, tt.total)
			}
			if r.Lines.Read != len(tt.lines) || r.Lines.Entries != len(tt.lines) || r.Lines.Bad != 0 {
				t.Errorf("lines %+v, want %d entries", r.Lines, len(tt.lines))
			}
		})
	}
}

func TestCensusBadLines(t *testing.T) {
	tests := []struct {
		name   string
		input  string
		reason string
	}{
		{"garbage", "not json at all", "not JSON"},
		{"array", `["a"]`, "not a JSON object"},
		{"string", `"event"`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"number", `42`, "not a JSON object"},
		{"truncated", `{"event":"permission_request.approved","requestId":"r`, "not JSON"},
		{"two objects", `{"event":"a"}{"event":"b"}`, "not JSON"},
		{"no event", `{"requestId":"r1"}`, "no event name"},
		{"event not a string", `{"event":7}`, "no event name"},
		{"empty event", `{"event":""}`, "no event name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := tt.input + "\n" + line(reviewlog.RequestApproved, "requestId", "after") + "\n"
			r, err := Census(strings.NewReader(input))
			if err != nil {
				t.Fatal(err)
			}
			if r.Lines.Bad != 1 || len(r.BadLines) != 1 || r.BadLines[0] != (BadLine{Line: 1, Reason: tt.reason}) {
				t.Errorf("bad lines %d %+v, want line 1: %s", r.Lines.Bad, r.BadLines, tt.reason)
			}
			if r.Total.Decisions != 1 {
				t.Errorf("the line after a bad one was not counted: %+v", r.Total)
			}
		})
	}
}

func TestCensusListsAFewBadLinesAndCountsAll(t *testing.T) {
	input := strings.Repeat("garbage\n", MaxBadLineExamples+3)
	r, err := Census(strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	if r.Lines.Bad != MaxBadLineExamples+3 || len(r.BadLines) != MaxBadLineExamples {
		t.Errorf("bad %d, listed %d", r.Lines.Bad, len(r.BadLines))
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "; 3 more") {
		t.Errorf("table does not say more bad lines exist:\n%s", table.String())
	}
}

// padTo returns a terminal line of exactly n bytes.
func padTo(t *testing.T, n int) string {
	t.Helper()
	prefix := `{"event":"permission_request.approved","requestId":"long","pad":"`
	s := prefix + strings.Repeat("x", n-len(prefix)-2) + `"}`
	if len(s) != n || !json.Valid([]byte(s)) {
		t.Fatalf("pad: %d bytes", len(s))
	}
	return s
}

func TestCensusLongLines(t *testing.T) {
	after := line(reviewlog.RequestDenied, "requestId", "after")
	tests := []struct {
		name     string
		input    string
		bad      int
		decision int
	}{
		{"exactly the cap", padTo(t, MaxLineBytes) + "\n" + after + "\n", 0, 2},
		{"exactly the cap, CRLF", padTo(t, MaxLineBytes) + "\r\n" + after + "\n", 0, 2},
		{"exactly the cap, no newline at EOF", after + "\n" + padTo(t, MaxLineBytes), 0, 2},
		{"one over", padTo(t, MaxLineBytes+1) + "\n" + after + "\n", 1, 1},
		{"one over, no newline at EOF", after + "\n" + padTo(t, MaxLineBytes+1), 1, 1},
		{"far over", padTo(t, 3*MaxLineBytes) + "\n" + after + "\n", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Census(strings.NewReader(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			if r.Lines.Read != 2 || r.Lines.Bad != tt.bad || r.Total.Decisions != tt.decision {
				t.Errorf("lines %+v, decisions %d; want 2 read, %d bad, %d decisions", r.Lines, r.Total.Decisions, tt.bad, tt.decision)
			}
			if tt.bad == 1 && !strings.HasPrefix(r.BadLines[0].Reason, "longer than") {
				t.Errorf("reason %q", r.BadLines[0].Reason)
			}
		})
	}
}

// The reader must not hold a long line: its buffer stays near the cap
// however long the line is.
func TestLineReaderMemoryIsBounded(t *testing.T) {
	const max = 1000
	input := strings.Repeat("y", 50*max) + "\n{}\n"
	lr := lineReader{br: bufio.NewReaderSize(strings.NewReader(input), readBufferSize), max: max}
	_, tooLong, err := lr.next()
	if err != nil || !tooLong {
		t.Fatalf("next = %v, %v", tooLong, err)
	}
	if c := cap(lr.buf); c > max+2+readBufferSize {
		t.Errorf("buffer grew to %d bytes for a cap of %d", c, max)
	}
	got, tooLong, err := lr.next()
	if err != nil || tooLong || string(got) != "{}" {
		t.Errorf("line after the long one: %q %v %v", got, tooLong, err)
	}
}

func TestCensusLineEndings(t *testing.T) {
	a := line(reviewlog.RequestApproved, "requestId", "a")
	b := line(reviewlog.RequestDenied, "requestId", "b")
	for name, input := range map[string]string{
		"LF":                a + "\n" + b + "\n",
		"CRLF":              a + "\r\n" + b + "\r\n",
		"no final newline":  a + "\n" + b,
		"blank lines":       "\n" + a + "\n\n   \n" + b + "\n",
		"whitespace-padded": "  " + a + "  \n\t" + b + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			r, err := Census(strings.NewReader(input))
			if err != nil {
				t.Fatal(err)
			}
			if r.Total != (Counts{2, 1, 1}) || r.Lines.Bad != 0 {
				t.Errorf("total %+v, lines %+v", r.Total, r.Lines)
			}
		})
	}
}

type brokenReader struct{ data io.Reader }

var errDisk = errors.New("disk read failed")

func (b *brokenReader) Read(p []byte) (int, error) {
	n, err := b.data.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errDisk
	}
	return n, err
}

func TestCensusReturnsReadErrorsWithWhatItRead(t *testing.T) {
	input := line(reviewlog.RequestApproved, "requestId", "a") + "\n" + line(reviewlog.RequestDenied, "requestId", "b") + "\n"
	r, err := Census(&brokenReader{strings.NewReader(input)})
	if !errors.Is(err, errDisk) {
		t.Fatalf("err = %v, want errDisk", err)
	}
	if !strings.Contains(err.Error(), "line 3") {
		t.Errorf("error %q does not say where", err)
	}
	if r.Total.Decisions != 2 {
		t.Errorf("report before the error: %+v", r.Total)
	}
}

// courier's own writer and the census agree: what reviewlog writes from
// provenance values is counted under the right deciders.
func TestCensusReadsCourierLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "review.jsonl")
	l, err := reviewlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	reason := strings.Repeat("long reason ", 500) // capped by the writer, still decodes
	writes := []struct {
		event   string
		details map[string]any
	}{
		{reviewlog.ForwardedAutoApproved, map[string]any{"requestId": "c1", "decidedBy": provenance.Rule{Surface: "bash", Pattern: provenance.Str("go test *")}}},
		{reviewlog.ForwardedResponseReceived, map[string]any{"requestId": "c1", "approved": true,
			"decidedBy": provenance.Nest(provenance.Str("broker"), provenance.Rule{Surface: "bash", Pattern: provenance.Str("go test *")})}},
		{reviewlog.ForwardedDenied, map[string]any{"requestId": "c2", "decidedBy": provenance.Authorizer{Name: "bash-judge", Verdict: provenance.VerdictDeny, Reason: &reason}}},
		{reviewlog.ForwardedDenied, map[string]any{"requestId": "c3", "decidedBy": provenance.Unavailable{Reason: "no human at the broker"}}},
		{reviewlog.LinkShadow, map[string]any{"requestId": "c3", "name": "new-judge", "verdict": "allow"}},
	}
	for _, w := range writes {
		if err := l.Write(w.event, w.details); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r := censusFile(t, path)
	if got := row(r, "rule", ""); got != (Counts{1, 1, 0}) {
		t.Errorf("rule %+v", got)
	}
	if got := row(r, "authorizer", "bash-judge"); got != (Counts{1, 0, 1}) {
		t.Errorf("bash-judge %+v", got)
	}
	if got := row(r, "unavailable", ""); got != (Counts{1, 0, 1}) {
		t.Errorf("unavailable %+v", got)
	}
	if r.Forwarded != (Counts{1, 1, 0}) || r.Total.Decisions != 3 || r.UndecodableDecidedBy != 0 || r.Lines.Bad != 0 {
		t.Errorf("report %+v", r)
	}
}

func TestTableQuotesAuthorizerNames(t *testing.T) {
	hostile := "evil\x1b[2J\nname"
	long := strings.Repeat("n", 200)
	input := line(reviewlog.RequestDenied, "requestId", "r1", "decidedBy", map[string]any{"kind": "authorizer", "name": hostile, "verdict": "deny", "reason": nil}) + "\n" +
		line(reviewlog.RequestDenied, "requestId", "r2", "decidedBy", map[string]any{"kind": "authorizer", "name": long, "verdict": "deny", "reason": nil}) + "\n"
	r, err := Census(strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	out := table.String()
	if strings.ContainsRune(out, '\x1b') {
		t.Errorf("escape sequence reached the table:\n%q", out)
	}
	if !strings.Contains(out, `authorizer "evil\x1b[2J\nname"`) {
		t.Errorf("hostile name not quoted:\n%s", out)
	}
	if strings.Contains(out, long) || !strings.Contains(out, strings.Repeat("n", maxLabelRunes-1)+"…") {
		t.Errorf("long name not shortened:\n%s", out)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), long) {
		t.Error("JSON report shortened the name")
	}
}

func TestEmptyLogReport(t *testing.T) {
	r, err := Census(strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	if r.Lines != (Lines{}) || r.Total != (Counts{}) || len(r.Deciders) != 8 {
		t.Errorf("report %+v", r)
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"badLines": []`) {
		t.Errorf("empty bad-line list is not [] in JSON:\n%s", js.String())
	}
}

func ExampleReport_WriteTable() {
	log := strings.Join([]string{
		`{"event":"forwarded_permission.approved","requestId":"perm-1","decidedBy":{"kind":"user","via":"dialog"}}`,
		`{"event":"forwarded_permission.response_received","requestId":"perm-1","approved":true,"decidedBy":{"kind":"forwarded","responderSessionId":"parent","decision":{"kind":"user","via":"dialog"}}}`,
		`{"event":"permission_request.blocked","requestId":"perm-2"}`,
	}, "\n")
	r, err := Census(strings.NewReader(log))
	if err != nil {
		fmt.Println(err)
		return
	}
	r.WriteTable(os.Stdout)
	// Output:
	// decider                         decisions  approved  denied
	// user                                    1         1       0
	// rule                                    0         0       0
	// session approval                        0         0       0
	// yolo                                    0         0       0
	// infrastructure read                     0         0       0
	// unavailable                             0         0       0
	// gate error                              0         0       0
	// no decider recorded                     1         0       1
	// -----------------------------------------------------------
	// forwarded (also counted above)          1         1       0
	// total                                   2         1       1
	//
	// lines read: 3 (3 entries, 0 blank, 0 bad)
	// terminal lines: 3, joined by requestId and request digest into 2 decisions
}
