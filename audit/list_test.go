package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
)

// logOf writes entries to a fresh review log, one millisecond apart from
// 10:00:00, and returns its path.
func logOf(t *testing.T, entries ...reviewlog.Entry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "review.jsonl")
	at := time.Date(2026, 7, 15, 10, 0, 0, 0, time.UTC)
	l, err := reviewlog.Open(path, reviewlog.WithClock(func() time.Time { at = at.Add(time.Millisecond); return at }))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, e := range entries {
		if err := l.Emit(e); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func listText(t *testing.T, path string, f Filter) string {
	t.Helper()
	var out bytes.Buffer
	ls := &Lister{Filter: f, Emit: func(l Listed) error { return l.WriteText(&out) }}
	if _, err := List(path, ls); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

var (
	rule    = provenance.Rule{Surface: "bash", Pattern: provenance.Str("git status *"), Origin: provenance.Str("global")}
	user    = provenance.User{Via: provenance.ViaDialog}
	nobody  = provenance.Unavailable{Reason: "No human is available"}
	linkBot = provenance.Authorizer{Name: "bot", Verdict: provenance.VerdictDeny}
)

func parties(agent string) reviewlog.Parties {
	return reviewlog.Parties{RequesterAgentName: agent, RequesterSessionID: "c-" + agent, TargetSessionID: "parent", RequestSHA256: "d-" + agent}
}

func bashAsked(value string, units ...string) reviewlog.Asked {
	return reviewlog.Asked{Surface: "bash", Value: value, Units: units, Cwd: "/w"}
}

// brokerRun is a broker's and its children's lines in one log: a rule's
// approval (auto_approved, approved, then the child's lines), an
// operator's approval, nobody answering, a link's denial of a path, and a
// line from before the broker logged what was asked.
func brokerRun() []reviewlog.Entry {
	return []reviewlog.Entry{
		reviewlog.ForwardedAutoApprovedEntry{RequestID: "perm-1", Parties: parties("Explore"), DecidedBy: rule, Asked: bashAsked("git status && ls", "git status", "ls")},
		reviewlog.ForwardedApprovedEntry{RequestID: "perm-1", Parties: parties("Explore"), Resolution: "approved", DecidedBy: rule, Asked: bashAsked("git status && ls", "git status", "ls")},
		reviewlog.ForwardedResponseReceivedEntry{RequestID: "perm-1", RequestSHA256: "d-Explore", Approved: true, State: "approved", DecidedBy: provenance.Forwarded{Decision: rule}},
		reviewlog.RequestApprovedEntry{RequestID: "perm-1", State: "approved", Resolution: "approved", DecidedBy: provenance.Forwarded{Decision: rule}},
		reviewlog.ForwardedPromptedEntry{RequestID: "perm-2", Parties: parties("Plan"), Asked: bashAsked("make deploy", "make deploy")},
		reviewlog.ForwardedApprovedEntry{RequestID: "perm-2", Parties: parties("Plan"), Resolution: "approved", DecidedBy: user, Asked: bashAsked("make deploy", "make deploy")},
		reviewlog.ForwardedDeniedEntry{RequestID: "perm-3", Parties: parties("Plan"), Resolution: "denied", DenialReason: "No human is available", DecidedBy: nobody, Asked: bashAsked("make publish", "make publish")},
		reviewlog.ForwardedDeniedEntry{RequestID: "perm-4", Parties: parties("Explore"), Resolution: "denied", DecidedBy: linkBot, Asked: reviewlog.Asked{Surface: "path_write", Value: "/etc/passwd", Cwd: "/w"}},
		reviewlog.ForwardedApprovedEntry{RequestID: "perm-5", Parties: parties("Old"), Resolution: "approved", DecidedBy: rule},
	}
}

// TestListSaysWhatWasAsked is issue 16 point 2: `broker audit --list`
// prints each decision once, newest last, with who decided, the outcome,
// the agent, the surface, what was asked (a bash ask's units) and the
// request id; a line from before the broker logged what was asked lists
// "?" for it.
func TestListSaysWhatWasAsked(t *testing.T) {
	got := listText(t, logOf(t, brokerRun()...), Filter{})
	want := `2026-07-15T10:00:00.001Z  rule  approved  Explore  bash  git status; ls  perm-1
2026-07-15T10:00:00.006Z  user  approved  Plan  bash  make deploy  perm-2
2026-07-15T10:00:00.007Z  unavailable  denied  Plan  bash  make publish  perm-3
2026-07-15T10:00:00.008Z  authorizer:bot  denied  Explore  path_write  /etc/passwd  perm-4
2026-07-15T10:00:00.009Z  rule  approved  Old  ?  ?  perm-5
`
	if got != want {
		t.Errorf("listing:\n%s\nwant:\n%s", got, want)
	}
}

// TestListPrefersTheLineThatSaysWhatWasAsked: the broker writes a rule's
// entries after its response, so its child's response_received often
// comes first in a shared log; the ask is listed from the broker's line,
// once.
func TestListPrefersTheLineThatSaysWhatWasAsked(t *testing.T) {
	path := logOf(t,
		reviewlog.ForwardedResponseReceivedEntry{RequestID: "perm-1", RequestSHA256: "d-Explore", Approved: true, State: "approved", DecidedBy: provenance.Forwarded{Decision: rule}},
		reviewlog.RequestApprovedEntry{RequestID: "perm-1", State: "approved", Resolution: "approved", DecidedBy: provenance.Forwarded{Decision: rule}},
		reviewlog.ForwardedAutoApprovedEntry{RequestID: "perm-1", Parties: parties("Explore"), DecidedBy: rule, Asked: bashAsked("git status", "git status")},
		reviewlog.ForwardedApprovedEntry{RequestID: "perm-1", Parties: parties("Explore"), Resolution: "approved", DecidedBy: rule, Asked: bashAsked("git status", "git status")},
		// A child's view alone (its parent logs elsewhere): listed as it is.
		reviewlog.ForwardedResponseReceivedEntry{RequestID: "perm-2", RequestSHA256: "d-2", Approved: false, State: "denied", DecidedBy: provenance.Forwarded{Decision: user}},
	)
	got := listText(t, path, Filter{})
	want := "2026-07-15T10:00:00.003Z  rule  approved  Explore  bash  git status  perm-1\n" +
		"2026-07-15T10:00:00.005Z  user  denied  ?  ?  ?  perm-2\n"
	if got != want {
		t.Errorf("listing:\n%s\nwant:\n%s", got, want)
	}
}

// TestListJoinsByDigest: an id used again with other request bytes (a
// child reusing ids across a broker's restart) is another decision.
func TestListJoinsByDigest(t *testing.T) {
	second := parties("Explore")
	second.RequestSHA256 = "d-other"
	path := logOf(t,
		reviewlog.ForwardedApprovedEntry{RequestID: "perm-1", Parties: parties("Explore"), Resolution: "approved", DecidedBy: rule, Asked: bashAsked("git status", "git status")},
		reviewlog.ForwardedDeniedEntry{RequestID: "perm-1", Parties: second, Resolution: "denied", DecidedBy: user, Asked: bashAsked("make deploy", "make deploy")},
		reviewlog.RequestDeniedEntry{RequestID: "perm-1", State: "denied", Resolution: "user_denied", DecidedBy: provenance.Forwarded{Decision: user}},
	)
	if got := strings.Count(listText(t, path, Filter{}), "\n"); got != 2 {
		t.Errorf("%d decisions listed, want 2", got)
	}
}

func TestListFilters(t *testing.T) {
	path := logOf(t, brokerRun()...)
	logged := time.Date(2026, 7, 15, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		filter Filter
		ids    []string
	}{
		{"decider user", Filter{Decider: "user"}, []string{"perm-2"}},
		{"decider rule", Filter{Decider: "rule"}, []string{"perm-1", "perm-5"}},
		{"decider authorizer", Filter{Decider: "authorizer"}, []string{"perm-4"}},
		{"decider one link", Filter{Decider: "authorizer:bot"}, []string{"perm-4"}},
		{"decider another link", Filter{Decider: "authorizer:judge"}, nil},
		{"decider unavailable", Filter{Decider: "unavailable"}, []string{"perm-3"}},
		{"agent", Filter{Agent: "Plan"}, []string{"perm-2", "perm-3"}},
		{"surface", Filter{Surface: "path_write"}, []string{"perm-4"}},
		{"outcome denied", Filter{Outcome: OutcomeDenied}, []string{"perm-3", "perm-4"}},
		{"outcome and agent", Filter{Outcome: OutcomeApproved, Agent: "Explore"}, []string{"perm-1"}},
		{"since before", Filter{Since: logged}, []string{"perm-1", "perm-2", "perm-3", "perm-4", "perm-5"}},
		{"since between", Filter{Since: logged.Add(7 * time.Millisecond)}, []string{"perm-3", "perm-4", "perm-5"}},
		{"since after", Filter{Since: logged.Add(time.Hour)}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ids []string
			ls := &Lister{Filter: c.filter, Emit: func(l Listed) error { ids = append(ids, l.RequestID); return nil }}
			if _, err := List(path, ls); err != nil {
				t.Fatal(err)
			}
			if strings.Join(ids, " ") != strings.Join(c.ids, " ") {
				t.Errorf("listed %v, want %v", ids, c.ids)
			}
		})
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 7, 15, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{in: "1h", want: now.Add(-time.Hour)},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "2026-07-15T09:00:00Z", want: now.Add(-time.Hour)},
		{in: "2026-07-15T11:00:00+02:00", want: now.Add(-time.Hour)},
		{in: "-1h", bad: true},
		{in: "yesterday", bad: true},
		{in: "", bad: true},
	} {
		got, err := ParseSince(c.in, now)
		if (err != nil) != c.bad || !c.bad && !got.Equal(c.want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v (error: %v)", c.in, got, err, c.want, c.bad)
		}
	}
}

// TestListIsSafeForATerminal: what a child wrote (escape sequences, a
// newline that would forge a second decision, C1 controls, bidi
// overrides, bytes that are not UTF-8) is printed escaped, on one line.
func TestListIsSafeForATerminal(t *testing.T) {
	hostile := "make deploy\x1b[2J\n2026-07-15T10:00:00.000Z  user  approved\r\u009b31m\u202eevil\xff\\"
	path := logOf(t,
		reviewlog.ForwardedApprovedEntry{RequestID: "perm-\x1b]0;x\x07", Parties: parties("Ex\tplore"), Resolution: "approved", DecidedBy: user, Asked: bashAsked(hostile, hostile)},
	)
	got := listText(t, path, Filter{})
	if strings.Count(got, "\n") != 1 {
		t.Errorf("one decision printed as %d lines:\n%s", strings.Count(got, "\n"), got)
	}
	for _, r := range got[:len(got)-1] {
		// The backslash is the escapes' own; the log itself replaced
		// the byte that was not UTF-8 with U+FFFD.
		if r != '\\' && r != utf8.RuneError && needsEscape(r, utf8.RuneLen(r)) {
			t.Errorf("the listing holds %U unescaped: %q", r, got)
		}
	}
	want := `make deploy\x1b[2J\n2026-07-15T10:00:00.000Z  user  approved\r\u009b31m\u202eevil�\\`
	if !strings.Contains(got, want) {
		t.Errorf("listing %q\ndoes not hold %q", got, want)
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"git status":         "git status",
		"é ü 日本":             "é ü 日本",
		"a\\b":               `a\\b`,
		"\x1b[31m":           `\x1b[31m`,
		"a\nb\tc\rd\x7f":     `a\nb\tc\rd\x7f`,
		"\u0085\u009b":       `\u0085\u009b`,
		"\u2028\u2029":       `\u2028\u2029`,
		"\u202e\u2066\u200f": `\u202e\u2066\u200f`,
		"\xff\xfe":           `\xff\xfe`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestListJSON: --list --json prints one JSON object per decision, with
// what was asked, and leaves out what a line does not say.
func TestListJSON(t *testing.T) {
	var out bytes.Buffer
	ls := &Lister{Emit: func(l Listed) error { return l.WriteJSON(&out) }}
	if _, err := List(logOf(t, brokerRun()...), ls); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	var first, old map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[4]), &old); err != nil {
		t.Fatal(err)
	}
	if first["decider"] != "rule" || first["outcome"] != "approved" || first["agent"] != "Explore" || first["surface"] != "bash" ||
		first["cwd"] != "/w" || first["requestId"] != "perm-1" || len(first["units"].([]any)) != 2 {
		t.Errorf("first decision: %v", first)
	}
	if _, ok := old["surface"]; ok {
		t.Errorf("an old line's decision has a surface: %v", old)
	}
}

// TestListReadsTheRotationFirst: a rotated log is listed oldest first,
// its rotation (<log>.1) before it.
func TestListReadsTheRotationFirst(t *testing.T) {
	path := logOf(t, brokerRun()[4:6]...)
	older := logOf(t, brokerRun()[:2]...)
	data, err := os.ReadFile(older)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+reviewlog.RotatedSuffix, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var ids []string
	ls := &Lister{Emit: func(l Listed) error { ids = append(ids, l.RequestID); return nil }}
	files, err := List(path, ls)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, " ") != "perm-1 perm-2" || len(files) != 2 {
		t.Errorf("listed %v from %v", ids, files)
	}
}

// TestListJSONIsSafeForATerminal: the JSON listing escapes what a
// terminal would act on too, and stays the same JSON.
func TestListJSONIsSafeForATerminal(t *testing.T) {
	hostile := "make\x1b[2J\x7f\u009b31m\u202eevil\u2028"
	var out bytes.Buffer
	ls := &Lister{Emit: func(l Listed) error { return l.WriteJSON(&out) }}
	path := logOf(t, reviewlog.ForwardedApprovedEntry{RequestID: "perm-1", Parties: parties("Explore"), Resolution: "approved", DecidedBy: user, Asked: bashAsked(hostile, hostile)})
	if _, err := List(path, ls); err != nil {
		t.Fatal(err)
	}
	for _, r := range out.String() {
		if r != '\\' && r != '\n' && needsEscape(r, utf8.RuneLen(r)) {
			t.Errorf("the JSON listing holds %U unescaped: %q", r, out.String())
		}
	}
	var l Listed
	if err := json.Unmarshal(out.Bytes(), &l); err != nil || l.Value != hostile {
		t.Errorf("decoded value %q (%v), want %q", l.Value, err, hostile)
	}
}
