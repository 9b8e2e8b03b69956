package audit

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Lines of one ask as courier's broker and child write them, with the
// request's digest where each knows it.
const (
	brokerApproved = `{"event":"forwarded_permission.approved","requestId":"perm-1","requestSha256":"%s","approved":true,"decidedBy":{"kind":"user","via":"terminal"}}`
	brokerDenied   = `{"event":"forwarded_permission.denied","requestId":"perm-1","requestSha256":"%s","approved":false,"decidedBy":{"kind":"rule","surface":"bash","pattern":"rm *","origin":"global"}}`
	childReceived  = `{"event":"forwarded_permission.response_received","requestId":"perm-1","requestSha256":"%s","approved":%s,"decidedBy":{"kind":"forwarded","responderSessionId":"p","decision":%s}}`
	childApproved  = `{"event":"permission_request.approved","requestId":"perm-1","approved":true,"decidedBy":{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"user","via":"terminal"}}}`
	childDenied    = `{"event":"permission_request.denied","requestId":"perm-1","approved":false,"decidedBy":{"kind":"forwarded","responderSessionId":"p","decision":{"kind":"rule","surface":"bash","pattern":"rm *","origin":"global"}}}`
	piApproved     = `{"event":"forwarded_permission.approved","requestId":"perm-1","approved":true,"decidedBy":{"kind":"user","via":"terminal"}}`
	digestA        = "aaaa"
	digestB        = "bbbb"
)

func sprintf(format string, args ...any) string {
	out := format
	for _, a := range args {
		out = strings.Replace(out, "%s", a.(string), 1)
	}
	return out
}

// A request id used twice (a child's ids reused across a broker's
// restart, issue 14) is two asks when the digests differ: joined by id
// alone, two decisions were counted as one.
func TestJoinByRequestIDAndDigest(t *testing.T) {
	user := `{"kind":"user","via":"terminal"}`
	rule := `{"kind":"rule","surface":"bash","pattern":"rm *","origin":"global"}`
	tests := []struct {
		name  string
		lines []string
		// decisions, approved, denied, forwarded decisions
		want [4]int
	}{
		{
			name:  "one id, two digests: two decisions",
			lines: []string{sprintf(brokerApproved, digestA), sprintf(brokerDenied, digestB)},
			want:  [4]int{2, 1, 1, 0},
		},
		{
			name: "the same, with each child's lines (a digest-less line joins the latest digest of its id)",
			lines: []string{
				sprintf(brokerApproved, digestA), sprintf(childReceived, digestA, "true", user), childApproved,
				sprintf(brokerDenied, digestB), sprintf(childReceived, digestB, "false", rule), childDenied,
			},
			want: [4]int{2, 1, 1, 2},
		},
		{
			name:  "one id, one digest, seen from both sides: one decision",
			lines: []string{sprintf(brokerApproved, digestA), sprintf(childReceived, digestA, "true", user), childApproved},
			want:  [4]int{1, 1, 0, 1},
		},
		{
			name:  "a line without a digest before any with one joins the first",
			lines: []string{childApproved, sprintf(brokerApproved, digestA)},
			want:  [4]int{1, 1, 0, 1},
		},
		{
			name:  "lines without digests (pi's) join by id, as before",
			lines: []string{piApproved, childApproved, piApproved},
			want:  [4]int{1, 1, 0, 1},
		},
		{
			name:  "a digest that is not a string is no digest",
			lines: []string{strings.Replace(sprintf(brokerApproved, digestA), `"aaaa"`, `7`, 1), sprintf(brokerDenied, digestB)},
			want:  [4]int{1, 1, 0, 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Census(strings.NewReader(strings.Join(tt.lines, "\n") + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			got := [4]int{r.Total.Decisions, r.Total.Approved, r.Total.Denied, r.Forwarded.Decisions}
			if got != tt.want {
				t.Errorf("decisions, approved, denied, forwarded = %v, want %v", got, tt.want)
			}
		})
	}
}

// CensusFile reads the log's rotation first, then the log, as one census,
// and says so; a bad line names its file.
func TestCensusFileReadsTheRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "review.jsonl")
	write := func(p string, lines ...string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The rotation ends in a torn line: the log's first line is still its
	// own.
	write(path+".1", sprintf(brokerApproved, digestA), `{"event":"forwarded_permission.appr`)
	write(path, sprintf(childReceived, digestA, "true", `{"kind":"user","via":"terminal"}`), sprintf(brokerDenied, digestB))
	r, err := CensusFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := [3]int{r.Total.Decisions, r.Total.Approved, r.Total.Denied}; got != [3]int{2, 1, 1} {
		t.Errorf("decisions, approved, denied = %v, want [2 1 1]", got)
	}
	if want := []string{path + ".1", path}; !reflect.DeepEqual(r.Files, want) {
		t.Errorf("files %v, want %v", r.Files, want)
	}
	if want := []BadLine{{File: path + ".1", Line: 2, Reason: "not JSON"}}; !reflect.DeepEqual(r.BadLines, want) {
		t.Errorf("bad lines %+v, want %+v", r.BadLines, want)
	}
	var table strings.Builder
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "files read: "+path+".1, "+path+"\n") || !strings.Contains(table.String(), "bad lines: "+path+".1 line 2: not JSON") {
		t.Errorf("table:\n%s", table.String())
	}

	// No rotation: the log alone. No log: an error.
	os.Remove(path + ".1")
	if r, err := CensusFile(path); err != nil || !reflect.DeepEqual(r.Files, []string{path}) || r.Total.Decisions != 2 {
		t.Errorf("without a rotation: %+v, %v", r, err)
	}
	if _, err := CensusFile(filepath.Join(dir, "missing.jsonl")); err == nil {
		t.Error("a missing log was read")
	}
}
