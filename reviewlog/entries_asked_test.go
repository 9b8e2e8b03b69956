package reviewlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// askedCases are the serving node's entries that record what was asked
// (issue 16), with the maps Write takes for the same details.
func askedCases(f facts, by json.Marshaler) []entryCase {
	id, path, resp, agent, rsid, target := f("id"), f("path"), f("responsePath"), f("agent"), f("requester"), f("target")
	parties := Parties{RequesterAgentName: agent, RequesterSessionID: rsid, TargetSessionID: target, RequestSHA256: f("digest")}
	var byAny any = by
	if by == nil {
		byAny = nil
	}
	bash := Asked{Surface: "bash", Value: f("command"), Units: []string{f("unit"), "make deploy"}, Cwd: f("cwd")}
	path1 := Asked{Surface: "path_write", Value: f("file"), Cwd: f("cwd")}
	askedKeys := func(a Asked, m map[string]any) map[string]any {
		if a.Surface != "" {
			m["surface"] = a.Surface
		}
		if a.Value != "" {
			m["value"] = a.Value
		}
		if a.Units != nil {
			m["units"] = a.Units
		}
		if a.Cwd != "" {
			m["requesterCwd"] = a.Cwd
		}
		return m
	}
	served := func(a Asked, extra map[string]any) map[string]any {
		m := map[string]any{"requestId": id, "source": "primary", "requesterAgentName": agent, "requesterSessionId": rsid, "targetSessionId": target, "requestPath": path, "requestSha256": f("digest")}
		for k, v := range extra {
			m[k] = v
		}
		return askedKeys(a, m)
	}
	answer := func(a Asked, approved bool) map[string]any {
		return askedKeys(a, map[string]any{"requestId": id, "requestSha256": f("digest"), "source": "primary", "requesterAgentName": agent, "requesterSessionId": rsid, "targetSessionId": target, "responsePath": resp, "approved": approved, "resolution": "approved", "denialReason": nil, "decidedBy": byAny})
	}
	var cases []entryCase
	for _, a := range []Asked{bash, path1, {Units: []string{}}, {Value: f("value")}} {
		cases = append(cases,
			entryCase{"auto_approved_asked", ForwardedAutoApprovedEntry{RequestID: id, Parties: parties, RequestPath: path, DecidedBy: by, Asked: a}, served(a, map[string]any{"decidedBy": byAny})},
			entryCase{"auto_denied_asked", ForwardedAutoDeniedEntry{RequestID: id, Parties: parties, RequestPath: path, DecidedBy: by, Asked: a}, served(a, map[string]any{"decidedBy": byAny})},
			entryCase{"prompted_asked", ForwardedPromptedEntry{RequestID: id, Parties: parties, RequestPath: path, Floor: f("floor"), Asked: a}, served(a, map[string]any{"floor": f("floor")})},
			entryCase{"approved_asked", ForwardedApprovedEntry{RequestID: id, Parties: parties, ResponsePath: resp, Resolution: "approved", DecidedBy: by, Asked: a}, answer(a, true)},
			entryCase{"denied_asked", ForwardedDeniedEntry{RequestID: id, Parties: parties, ResponsePath: resp, Resolution: "approved", DecidedBy: by, Asked: a}, answer(a, false)},
		)
	}
	return cases
}

// TestAskedEntriesMatchWrite holds the entries that record what was asked
// to the generic definition of a line: the same keys in byte order, the
// child's text escaped and cut to the width, no key for what is unknown.
func TestAskedEntriesMatchWrite(t *testing.T) {
	for _, width := range []int{1, 3, 40, DefaultFieldWidth} {
		for fname, f := range map[string]facts{"plain": plainFacts, "hostile": hostileFacts} {
			for i, by := range deciders(f) {
				for _, c := range askedCases(f, by) {
					var emitted, written bytes.Buffer
					cfg := config{width: width, extension: DefaultExtension, now: fixedClock}
					if err := newLog(&emitted, nil, cfg).Emit(c.entry); err != nil {
						t.Fatal(err)
					}
					l := newLog(&written, nil, cfg)
					if err := l.Write(c.entry.Event(), c.details); err != nil {
						t.Fatal(err)
					}
					if emitted.String() != written.String() {
						t.Fatalf("%s, width %d, %s facts, decider %d:\nEmit  %s\nWrite %s", c.name, width, fname, i, emitted.String(), written.String())
					}
					if generic := genericEntryLine(l, c.entry.Event(), c.details); emitted.String() != generic {
						t.Fatalf("%s, width %d, %s facts, decider %d:\nEmit    %s\ngeneric %s", c.name, width, fname, i, emitted.String(), generic)
					}
				}
			}
		}
	}
}

// TestAskedKeysAreNotSensitive: none of the keys of what was asked is one
// Write would mask, which Emit takes for granted.
func TestAskedKeysAreNotSensitive(t *testing.T) {
	for _, c := range askedCases(plainFacts, nil) {
		r := getRenderer(DefaultFieldWidth, Redacted)
		c.entry.appendDetails(details{r})
		for _, f := range r.fields {
			if IsSensitiveKey(f.key) {
				t.Errorf("%s: key %q is sensitive", c.name, f.key)
			}
		}
		putRenderer(r)
	}
}

// TestAskedIsRecorded is issue 16's complaint at the entry's level: a
// decision line names the command asked, its units and the cwd, as JSON
// strings (a hostile unit cannot break out of its string), cut to the
// field width.
func TestAskedIsRecorded(t *testing.T) {
	hostile := "make deploy\"},\"event\":\"forged\x1b[2J"
	a := Asked{Surface: "bash", Value: "cd /w && make deploy", Units: []string{"cd /w", hostile, strings.Repeat("x", 50)}, Cwd: "/w"}
	var buf bytes.Buffer
	cfg := config{width: 20, extension: DefaultExtension, now: fixedClock}
	if err := newLog(&buf, nil, cfg).Emit(ForwardedApprovedEntry{RequestID: "perm-1", Resolution: "approved", Asked: a}); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("line is not JSON: %v\n%s", err, buf.String())
	}
	if line["event"] != ForwardedApproved {
		t.Errorf("event = %v, the child's text forged it", line["event"])
	}
	if line["surface"] != "bash" || line["value"] != "cd /w && make deploy" || line["requesterCwd"] != "/w" {
		t.Errorf("asked keys = %v %v %v", line["surface"], line["value"], line["requesterCwd"])
	}
	units, _ := line["units"].([]any)
	if len(units) != 3 || units[0] != "cd /w" || units[1] != "make deploy\"},\"even…" || units[2] != strings.Repeat("x", 19)+"…" {
		t.Errorf("units = %q", units)
	}
}
