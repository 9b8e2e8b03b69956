package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/reviewlog"
)

// TestShadowFixture pins the shadow report of a broker's log with two
// shadow links (testdata/shadow-review.jsonl; each ask is named where it
// is counted below). The counts are written out here, not only
// in the golden files, so a regenerated golden cannot quietly change
// them.
func TestShadowFixture(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "shadow-review.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := Shadow(f)
	if err != nil {
		t.Fatalf("Shadow: %v", err)
	}
	want := ShadowReport{
		Version: ShadowReportVersion,
		Links: []ShadowLink{
			{
				Name:     "judge",
				Verdicts: 12,
				// perm-a and perm-k approved by the user, perm-b denied by
				// the user before the verdict came, perm-h never decided.
				Allow: Finals{Approved: 2, Denied: 1, NoDecision: 1},
				// perm-c approved by the user; perm-d denied by an
				// enforcing link; perm-a's second ask denied by the user.
				Deny: Finals{Approved: 1, Denied: 2},
				// perm-f and perm-i approved, perm-g denied, perm-e
				// unavailable, the verdict without a request id.
				Defer:          Finals{Approved: 2, Denied: 1, Unavailable: 1, NoDecision: 1},
				WouldDecide:    7,
				HumanDecided:   5, // perm-a (twice), perm-b, perm-c, perm-k
				HumanOtherwise: 2, // perm-b, perm-c
				Failed:         1, // perm-g timed out
				DeferCodes: []CodeCount{
					{Code: "", Count: 2}, // perm-g's failure, perm-i's "Not A Code"
					{Code: "missing_cwd", Count: 1},
					{Code: "not_bash", Count: 1},
					{Code: "timeout", Count: 1},
				},
			},
			{
				Name:           "strict",
				Verdicts:       2,
				Deny:           Finals{Approved: 1},
				Defer:          Finals{Unavailable: 1},
				WouldDecide:    1,
				HumanDecided:   1,
				HumanOtherwise: 1,
				DeferCodes:     []CodeCount{{Code: "", Count: 1}},
			},
		},
		UnreadableVerdicts: 2,
		RepeatedVerdicts:   1,
		Lines:              Lines{Read: 44, Bad: 1, Entries: 43, Terminal: 12},
		BadLines:           []BadLine{{Line: 44, Reason: "not JSON"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shadow report:\n got %+v\nwant %+v", got, want)
	}

	var table, js bytes.Buffer
	if err := got.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := got.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "shadow-review.table.golden"), table.Bytes())
	golden(t, filepath.Join("testdata", "shadow-review.json.golden"), js.Bytes())

	var back ShadowReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, got) {
		t.Errorf("JSON report does not round-trip:\n got %+v\nwant %+v", back, got)
	}
}

// shadowLine is a courier shadow line of link on id.
func shadowLine(id, link, verdict string) string {
	return line(reviewlog.LinkShadow, "requestId", id, "name", link, "verdict", verdict, "latencyMs", 3)
}

func chainLine(id string) string {
	return line(reviewlog.ChainResolved, "requestId", id, "links", []string{}, "shadowLinks", []string{"judge"})
}

func finalLine(id, digest string, approved bool, kind string) string {
	event := reviewlog.ForwardedApproved
	if !approved {
		event = reviewlog.ForwardedDenied
	}
	return line(event, "requestId", id, "requestSha256", digest, "approved", approved, "decidedBy", map[string]any{"kind": kind, "via": "dialog", "reason": "r"})
}

// The join of a verdict to the final decision of its own ask: the
// verdict comes before or after it, an id is used again after a restart,
// the chain's entry is missing.
func TestShadowJoin(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		want  ShadowLink
	}{
		{
			name:  "the verdict before the human's answer",
			lines: []string{chainLine("p"), shadowLine("p", "judge", "deny"), finalLine("p", "d1", true, "user")},
			want:  ShadowLink{Deny: Finals{Approved: 1}, HumanDecided: 1, HumanOtherwise: 1},
		},
		{
			name:  "the verdict after an answer made at once",
			lines: []string{chainLine("p"), finalLine("p", "d1", false, "unavailable"), shadowLine("p", "judge", "allow")},
			want:  ShadowLink{Allow: Finals{Unavailable: 1}},
		},
		{
			// Joined by id alone, the second ask's verdict would meet the
			// first ask's approval and count as the human disagreeing.
			name: "an id used again after a restart: each verdict meets its own ask",
			lines: []string{
				chainLine("p"), finalLine("p", "d1", true, "user"), shadowLine("p", "judge", "allow"),
				chainLine("p"), shadowLine("p", "judge", "deny"), finalLine("p", "d2", false, "user"),
			},
			want: ShadowLink{Allow: Finals{Approved: 1}, Deny: Finals{Denied: 1}, HumanDecided: 2},
		},
		{
			name:  "the chain's entry rotated away, the answer before: the latest ask",
			lines: []string{finalLine("p", "d1", true, "user"), shadowLine("p", "judge", "allow")},
			want:  ShadowLink{Allow: Finals{Approved: 1}, HumanDecided: 1},
		},
		{
			name:  "the chain's entry rotated away, the answer after: the next ask",
			lines: []string{shadowLine("p", "judge", "allow"), finalLine("p", "d1", false, "user")},
			want:  ShadowLink{Allow: Finals{Denied: 1}, HumanDecided: 1, HumanOtherwise: 1},
		},
		{
			name:  "an ask never answered",
			lines: []string{chainLine("p"), shadowLine("p", "judge", "allow")},
			want:  ShadowLink{Allow: Finals{NoDecision: 1}},
		},
		{
			name: "a rule's decision of the same id later does not join an answered ask",
			lines: []string{
				chainLine("p"), shadowLine("p", "judge", "deny"), finalLine("p", "d1", false, "user"),
				finalLine("p", "d2", true, "rule"),
			},
			want: ShadowLink{Deny: Finals{Denied: 1}, HumanDecided: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Shadow(strings.NewReader(strings.Join(tt.lines, "\n") + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Links) != 1 {
				t.Fatalf("links: %+v", r.Links)
			}
			got := r.Links[0]
			tt.want.Name = "judge"
			tt.want.Verdicts = tt.want.Allow.total() + tt.want.Deny.total() + tt.want.Defer.total()
			tt.want.WouldDecide = tt.want.Allow.total() + tt.want.Deny.total()
			tt.want.DeferCodes = []CodeCount{}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// ShadowFile reads the rotation first: a verdict in <log>.1 meets its
// answer in <log>.
func TestShadowFileRotated(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "review.jsonl")
	old := strings.Join([]string{chainLine("p"), shadowLine("p", "judge", "deny")}, "\n") + "\n"
	if err := os.WriteFile(path+reviewlog.RotatedSuffix, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := line(reviewlog.LogRotated, reviewlog.KeyPreviousSize, len(old))
	cur := strings.Join([]string{marker, finalLine("p", "d1", true, "user")}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(cur), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := ShadowFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Links) != 1 || r.Links[0].Deny != (Finals{Approved: 1}) || r.Links[0].HumanOtherwise != 1 {
		t.Errorf("links: %+v", r.Links)
	}
	if len(r.RotatedAway) != 0 || !reflect.DeepEqual(r.Files, []string{path + reviewlog.RotatedSuffix, path}) {
		t.Errorf("files %v, rotated away %+v", r.Files, r.RotatedAway)
	}

	// Without the rotation the verdict is gone, and the report says the
	// history was rotated away.
	if err := os.Remove(path + reviewlog.RotatedSuffix); err != nil {
		t.Fatal(err)
	}
	r, err = ShadowFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Links) != 0 || len(r.RotatedAway) != 1 {
		t.Errorf("links %+v, rotated away %+v", r.Links, r.RotatedAway)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no shadow link gave a verdict in this log", "rotated away"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

// A link name from the log cannot write to the operator's terminal.
func TestShadowTableEscapesNames(t *testing.T) {
	r, err := Shadow(strings.NewReader(shadowLine("p", "ju\x1b[2Jdge\n", "allow") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(table.String(), '\x1b') || !strings.Contains(table.String(), `"ju\x1b[2Jdge\n"`) {
		t.Errorf("table:\n%s", table.String())
	}
}
