package reviewlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/seed6639df8c/courier/provenance"
)

// An entry and the details map its call site built for the same facts
// before entries had types, which Write still takes: Emit must write the
// map's line byte for byte.
type entryCase struct {
	name    string
	entry   Entry
	details map[string]any
}

// facts are the strings the cases are built from: realistic ones, and
// hostile ones that need escaping, capping and repair.
type facts func(name string) string

func plainFacts(name string) string {
	switch name {
	case "path":
		return "/home/dev/.pi/agent/permission-forwarding/sessions/019a3b7c/requests/perm-1757000000123-4f2a9c.json"
	case "id":
		return "perm-1757000000123-4f2a9c"
	}
	return name + "-value"
}

func hostileFacts(name string) string {
	return name + " \"quoted\" \\ <b>&</b> \u2028 \x01 \xff\xfe é " + strings.Repeat("ü", 1100)
}

// marshaled is a free-form decider whose JSON nests a sensitive key.
type marshaled string

func (m marshaled) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"kind": "custom", "token": string(m), "note": string(m)})
}

type panicking struct{}

func (panicking) MarshalJSON() ([]byte, error) { panic("boom") }

func deciders(f facts) []json.Marshaler {
	reason := f("reason")
	return []json.Marshaler{
		provenance.Rule{Surface: f("surface"), Pattern: provenance.Str(f("pattern")), Origin: provenance.Str("global")},
		provenance.Forwarded{ResponderSessionID: provenance.Str(f("responder")), Decision: provenance.Authorizer{Name: f("link"), Verdict: provenance.VerdictDeny, Reason: &reason}},
		provenance.Unavailable{Reason: reason},
		nil,
		marshaled(f("secret")),
		panicking{},
	}
}

func entryCases(f facts, by json.Marshaler) []entryCase {
	id, path, resp, agent, rsid, target := f("id"), f("path"), f("responsePath"), f("agent"), f("requester"), f("target")
	parties := Parties{RequesterAgentName: agent, RequesterSessionID: rsid, TargetSessionID: target}
	digest := f("digest")
	digested := parties
	digested.RequestSHA256 = digest
	served := func(extra map[string]any) map[string]any {
		m := map[string]any{"requestId": id, "source": "primary", "requesterAgentName": agent, "requesterSessionId": rsid, "targetSessionId": target, "requestPath": path}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	grants := []SessionGrant{{Surface: "bash", Pattern: f("pattern")}, {Surface: f("surface"), Pattern: "*"}}
	var byAny any = by // a nil decider is a nil detail
	if by == nil {
		byAny = nil
	}
	fail := errors.New(f("error"))
	return []entryCase{
		{"serving_started", ForwardedServingStartedEntry{SessionID: target}, map[string]any{"sessionId": target}},
		{"serving_stopped", ForwardedServingStoppedEntry{SessionID: target}, map[string]any{"sessionId": target}},
		{"auto_approved", ForwardedAutoApprovedEntry{RequestID: id, Parties: parties, RequestPath: path, DecidedBy: by}, served(map[string]any{"decidedBy": byAny})},
		{"auto_denied", ForwardedAutoDeniedEntry{RequestID: id, Parties: parties, RequestPath: path, DecidedBy: by}, served(map[string]any{"decidedBy": byAny})},
		{"prompted", ForwardedPromptedEntry{RequestID: id, Parties: parties, RequestPath: path}, served(nil)},
		{"prompted_floor", ForwardedPromptedEntry{RequestID: id, Parties: parties, RequestPath: path, Floor: f("floor")}, served(map[string]any{"floor": f("floor")})},
		{"approved", ForwardedApprovedEntry{RequestID: id, Parties: parties, ResponsePath: resp, Resolution: "approved", DecidedBy: by},
			map[string]any{"requestId": id, "source": "primary", "requesterAgentName": agent, "requesterSessionId": rsid, "targetSessionId": target, "responsePath": resp, "approved": true, "resolution": "approved", "denialReason": nil, "decidedBy": byAny}},
		{"denied", ForwardedDeniedEntry{RequestID: id, Parties: parties, ResponsePath: resp, Resolution: f("state"), DenialReason: f("reason"), DecidedBy: by},
			map[string]any{"requestId": id, "source": "primary", "requesterAgentName": agent, "requesterSessionId": rsid, "targetSessionId": target, "responsePath": resp, "approved": false, "resolution": f("state"), "denialReason": f("reason"), "decidedBy": byAny}},
		{"requester_gone", ForwardedRequesterGoneEntry{RequestID: id, RequestPath: path, Reason: f("reason")}, map[string]any{"requestId": id, "requestPath": path, "reason": f("reason")}},
		{"session_recorded", ForwardedSessionRecordedEntry{RequestID: id, Parties: parties, RequestPath: path, Grants: grants}, served(map[string]any{"grants": grants})},
		{"session_recorded_none", ForwardedSessionRecordedEntry{RequestID: id, Parties: parties, RequestPath: path}, served(map[string]any{"grants": []SessionGrant(nil)})},
		{"session_reloaded", ForwardedSessionReloadedEntry{SessionID: target, Journal: f("journal"), Grants: 7, Revoked: grants, Added: []SessionGrant{}},
			map[string]any{"sessionId": target, "journal": f("journal"), "grants": 7, "revoked": grants, "added": []SessionGrant{}}},

		{"request_created", ForwardedRequestCreatedEntry{RequestID: id, RequesterAgentName: agent, RequesterSessionID: rsid, TargetSessionID: target, RequestPath: path, ResponsePath: resp},
			map[string]any{"requestId": id, "requesterAgentName": agent, "requesterSessionId": rsid, "targetSessionId": target, "requestPath": path, "responsePath": resp}},
		{"response_received", ForwardedResponseReceivedEntry{RequestID: id, TargetSessionID: target, ResponsePath: resp, Approved: true, State: f("state"), ResponderSessionID: f("responder"), DecidedBy: by},
			map[string]any{"requestId": id, "approved": true, "state": f("state"), "denialReason": nil, "responderSessionId": f("responder"), "targetSessionId": target, "responsePath": resp, "decidedBy": byAny}},
		{"response_received_denied", ForwardedResponseReceivedEntry{RequestID: id, TargetSessionID: target, ResponsePath: resp, State: "denied_with_reason", DenialReason: f("reason"), DecidedBy: by},
			map[string]any{"requestId": id, "approved": false, "state": "denied_with_reason", "denialReason": f("reason"), "responderSessionId": "", "targetSessionId": target, "responsePath": resp, "decidedBy": byAny}},
		{"response_unreadable", ForwardedResponseReceivedEntry{RequestID: id, TargetSessionID: target, ResponsePath: resp, Error: fail, Approved: true, DecidedBy: by},
			map[string]any{"requestId": id, "approved": nil, "state": nil, "denialReason": nil, "responderSessionId": nil, "targetSessionId": target, "responsePath": resp, "error": fail.Error()}},
		{"no_serving_session", ForwardedNoServingSessionEntry{RequestID: id, RequesterSessionID: rsid, TargetSessionID: target, ServingChannel: "heartbeat", ServingState: f("state"), ServingSessionIDs: []string{}, DecidedBy: by},
			map[string]any{"requestId": id, "requesterSessionId": rsid, "targetSessionId": target, "servingChannel": "heartbeat", "servingState": f("state"), "servingSessionIds": []string{}, "approved": false, "decidedBy": byAny}},
		{"response_timed_out", ForwardedResponseTimedOutEntry{RequestID: id, RequesterAgentName: agent, TargetSessionID: target, ResponsePath: resp, DecidedBy: by},
			map[string]any{"requestId": id, "requesterAgentName": agent, "targetSessionId": target, "responsePath": resp, "approved": false, "decidedBy": byAny}},
		{"request_approved", RequestApprovedEntry{RequestID: id, State: "approved_for_session", Resolution: f("resolution"), DecidedBy: by, SessionGrantWidth: "proven"},
			map[string]any{"requestId": id, "approved": true, "state": "approved_for_session", "resolution": f("resolution"), "denialReason": nil, "decidedBy": byAny, "sessionGrantWidth": "proven"}},
		{"request_denied", RequestDeniedEntry{RequestID: "", State: "denied", Resolution: f("resolution"), DenialReason: f("reason"), DecidedBy: by},
			map[string]any{"requestId": "", "approved": false, "state": "denied", "resolution": f("resolution"), "denialReason": f("reason"), "decidedBy": byAny}},
		{"session_approved", RequestSessionApprovedEntry{RequestID: id, RequesterAgentName: agent, RequesterSessionID: rsid, State: "approved_for_session", Resolution: "session_approved", DecidedBy: by},
			map[string]any{"requestId": id, "requesterAgentName": agent, "requesterSessionId": rsid, "approved": true, "state": "approved_for_session", "resolution": "session_approved", "decidedBy": byAny}},

		{"chain_resolved", ChainResolvedEntry{RequestID: id, Links: []string{}}, map[string]any{"requestId": id, "links": []string{}}},
		{"chain_resolved_nil", ChainResolvedEntry{RequestID: id}, map[string]any{"requestId": id, "links": []string(nil)}},
		{"chain_resolved_shadows", ChainResolvedEntry{RequestID: id, Links: []string{f("link"), "b"}, ShadowLinks: []string{f("shadow")}},
			map[string]any{"requestId": id, "links": []string{f("link"), "b"}, "shadowLinks": []string{f("shadow")}}},
		{"chain_delegated", ChainDelegatedEntry{RequestID: id, Links: []string{f("link"), "b"}}, map[string]any{"requestId": id, "links": []string{f("link"), "b"}}},
		{"chain_delegated_none", ChainDelegatedEntry{RequestID: id, Links: []string{}}, map[string]any{"requestId": id, "links": []string{}}},
		{"link_verdict", LinkVerdictEntry{RequestID: id, Name: f("link"), Verdict: "defer", LatencyMs: 12.345},
			map[string]any{"requestId": id, "name": f("link"), "verdict": "defer", "reason": nil, "latencyMs": 12.345}},
		{"link_verdict_capped", LinkVerdictEntry{RequestID: id, Name: f("link"), Verdict: "defer", LatencyMs: 0.001, Capped: true, LinkVerdict: "allow"},
			map[string]any{"requestId": id, "name": f("link"), "verdict": "defer", "reason": nil, "latencyMs": 0.001, "capped": true, "linkVerdict": "allow"}},
		{"link_shadow_failed", LinkShadowEntry{RequestID: id, Name: f("link"), Verdict: "deny", Reason: f("reason"), LatencyMs: 1e21, Failure: "timed out", Error: fail},
			map[string]any{"requestId": id, "name": f("link"), "verdict": "deny", "reason": f("reason"), "latencyMs": 1e21, "failure": "timed out", "error": fail.Error()}},
		{"link_verdict_nan", LinkVerdictEntry{RequestID: id, Name: f("link"), Verdict: "allow", LatencyMs: math.NaN()},
			map[string]any{"requestId": id, "name": f("link"), "verdict": "allow", "reason": nil, "latencyMs": math.NaN()}},
		{"link_verdict_notes", LinkVerdictEntry{RequestID: id, Name: f("link"), Verdict: "defer", Reason: f("reason"), LatencyMs: 1.5,
			Code: "missing_cwd", Model: f("model"), PromptVersion: f("prompt"), InputTokens: 812, OutputTokens: 1 << 40, ModelLatencyMs: 930},
			map[string]any{"requestId": id, "name": f("link"), "verdict": "defer", "reason": f("reason"), "latencyMs": 1.5,
				"code": "missing_cwd", "model": f("model"), "promptVersion": f("prompt"), "inputTok": int64(812), "outputTok": int64(1 << 40), "modelLatencyMs": int64(930)}},
		{"link_disabled", LinkDisabledEntry{Name: f("link"), Path: path, Error: fail}, map[string]any{"name": f("link"), "path": path, "error": fail.Error()}},

		{"warning", ForwardingWarningEntry{Message: f("message")}, map[string]any{"message": f("message")}},
		{"warning_request", ForwardingWarningEntry{Message: f("message"), RequestID: Str(id), Error: fail},
			map[string]any{"requestId": id, "message": f("message"), "error": fail.Error()}},
		{"warning_files", ForwardingWarningEntry{Message: f("message"), RequestPath: path, ResponsePath: resp},
			map[string]any{"message": f("message"), "requestPath": path, "responsePath": resp}},
		{"warning_served", ForwardingWarningEntry{Message: f("message"), RequestID: Str(id), Parties: &parties, RequestPath: path, ResponsePath: resp, Error: fail},
			served(map[string]any{"message": f("message"), "responsePath": resp, "error": fail.Error()})},
		{"error", ForwardingErrorEntry{Message: f("message"), RequestID: Str(""), Error: fail},
			map[string]any{"requestId": "", "message": f("message"), "error": fail.Error()}},
		{"error_files", ForwardingErrorEntry{Message: f("message"), RequestID: Str(id), RequestPath: path, ResponsePath: resp, Journal: f("journal"), Stack: f("stack"), Error: fail},
			map[string]any{"requestId": id, "message": f("message"), "requestPath": path, "responsePath": resp, "journal": f("journal"), "stack": f("stack"), "error": fail.Error()}},
		{"error_bare", ForwardingErrorEntry{Message: f("message")}, map[string]any{"message": f("message")}},

		// With the request's digest, where the writer knows it.
		{"auto_approved_digest", ForwardedAutoApprovedEntry{RequestID: id, Parties: digested, RequestPath: path, DecidedBy: by}, served(map[string]any{"decidedBy": byAny, "requestSha256": digest})},
		{"prompted_digest", ForwardedPromptedEntry{RequestID: id, Parties: digested, RequestPath: path}, served(map[string]any{"requestSha256": digest})},
		{"approved_digest", ForwardedApprovedEntry{RequestID: id, Parties: digested, ResponsePath: resp, Resolution: "approved", DecidedBy: by},
			map[string]any{"requestId": id, "requestSha256": digest, "source": "primary", "requesterAgentName": agent, "requesterSessionId": rsid, "targetSessionId": target, "responsePath": resp, "approved": true, "resolution": "approved", "denialReason": nil, "decidedBy": byAny}},
		// Which terminal answered: courier's own key beside the union's decidedBy.
		{"approved_terminal", ForwardedApprovedEntry{RequestID: id, Parties: parties, ResponsePath: resp, Resolution: "approved", DecidedBy: by, Terminal: "tty"},
			map[string]any{"requestId": id, "source": "primary", "requesterAgentName": agent, "requesterSessionId": rsid, "targetSessionId": target, "responsePath": resp, "approved": true, "resolution": "approved", "denialReason": nil, "decidedBy": byAny, "terminal": "tty"}},
		{"session_recorded_digest", ForwardedSessionRecordedEntry{RequestID: id, Parties: digested, RequestPath: path, Grants: grants}, served(map[string]any{"grants": grants, "requestSha256": digest})},
		{"warning_served_digest", ForwardingWarningEntry{Message: f("message"), RequestID: Str(id), Parties: &digested, RequestPath: path},
			served(map[string]any{"message": f("message"), "requestSha256": digest})},
		{"request_created_digest", ForwardedRequestCreatedEntry{RequestID: id, RequestSHA256: digest, RequesterAgentName: agent, RequesterSessionID: rsid, TargetSessionID: target, RequestPath: path, ResponsePath: resp},
			map[string]any{"requestId": id, "requestSha256": digest, "requesterAgentName": agent, "requesterSessionId": rsid, "targetSessionId": target, "requestPath": path, "responsePath": resp}},
		{"response_received_digest", ForwardedResponseReceivedEntry{RequestID: id, RequestSHA256: digest, TargetSessionID: target, ResponsePath: resp, Approved: true, State: f("state"), ResponderSessionID: f("responder"), DecidedBy: by},
			map[string]any{"requestId": id, "requestSha256": digest, "approved": true, "state": f("state"), "denialReason": nil, "responderSessionId": f("responder"), "targetSessionId": target, "responsePath": resp, "decidedBy": byAny}},
		{"response_unreadable_digest", ForwardedResponseReceivedEntry{RequestID: id, RequestSHA256: digest, TargetSessionID: target, ResponsePath: resp, Error: fail},
			map[string]any{"requestId": id, "requestSha256": digest, "approved": nil, "state": nil, "denialReason": nil, "responderSessionId": nil, "targetSessionId": target, "responsePath": resp, "error": fail.Error()}},
		{"no_serving_session_digest", ForwardedNoServingSessionEntry{RequestID: id, RequestSHA256: digest, RequesterSessionID: rsid, TargetSessionID: target, ServingChannel: "heartbeat", ServingState: f("state"), ServingSessionIDs: []string{}, DecidedBy: by},
			map[string]any{"requestId": id, "requestSha256": digest, "requesterSessionId": rsid, "targetSessionId": target, "servingChannel": "heartbeat", "servingState": f("state"), "servingSessionIds": []string{}, "approved": false, "decidedBy": byAny}},
		{"response_timed_out_digest", ForwardedResponseTimedOutEntry{RequestID: id, RequestSHA256: digest, RequesterAgentName: agent, TargetSessionID: target, ResponsePath: resp, DecidedBy: by},
			map[string]any{"requestId": id, "requestSha256": digest, "requesterAgentName": agent, "targetSessionId": target, "responsePath": resp, "approved": false, "decidedBy": byAny}},
	}
}

// genericEntryLine is the line of event with details as the generic path
// alone writes it: every detail encoded, decoded, masked, capped and
// encoded again, in key order.
func genericEntryLine(l *Log, event string, details map[string]any) string {
	var buf bytes.Buffer
	logger := zerolog.New(&buf)
	e := logger.Log()
	e.Str(keyTimestamp, l.now().UTC().Format(timestampLayout)).Str(keyExtension, l.extension).Str(keyStream, Stream).Str(keyEvent, event)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range details {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		e.RawJSON(k, renderGeneric(k, details[k], l.width))
	}
	e.Send()
	return buf.String()
}

// TestEmitMatchesWrite is the golden test of the typed entries: for each
// event, at several widths, with realistic and hostile strings and every
// kind of decider, Emit writes the bytes Write writes for the map its call
// site used to build, and the generic path agrees with both.
func TestEmitMatchesWrite(t *testing.T) {
	seen := map[string]bool{}
	for _, width := range []int{1, 3, 40, DefaultFieldWidth} {
		for fname, f := range map[string]facts{"plain": plainFacts, "hostile": hostileFacts} {
			for i, by := range deciders(f) {
				for _, c := range entryCases(f, by) {
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
					seen[c.entry.Event()] = true
				}
			}
		}
	}
	for _, event := range eventsWithEntries {
		if !seen[event] {
			t.Errorf("no golden case for %s", event)
		}
	}
}

// TestBenchmarkEntriesMatchTheirMaps holds BenchmarkWrite's entries to the
// maps they replaced, so that its figures compare like with like.
func TestBenchmarkEntriesMatchTheirMaps(t *testing.T) {
	received, receivedDetails := responseReceived()
	for _, c := range []entryCase{
		{"auto_approved", autoApprovedEntry(), autoApprovedDetails()},
		{"approved", approvedEntry(), approvedDetails()},
		{"response_received", received, receivedDetails},
	} {
		var emitted, written bytes.Buffer
		cfg := config{width: DefaultFieldWidth, extension: DefaultExtension, now: fixedClock}
		if err := newLog(&emitted, nil, cfg).Emit(c.entry); err != nil {
			t.Fatal(err)
		}
		if err := newLog(&written, nil, cfg).Write(c.entry.Event(), c.details); err != nil {
			t.Fatal(err)
		}
		if emitted.String() != written.String() {
			t.Errorf("%s:\nEmit  %s\nWrite %s", c.name, emitted.String(), written.String())
		}
	}
}

// eventsWithEntries are the events courier writes, one entry type each.
var eventsWithEntries = []string{
	ForwardedRequestCreated, ForwardedResponseReceived, ForwardedNoServingSession, ForwardedResponseTimedOut,
	ForwardedSessionReloaded, ForwardedServingStarted, ForwardedServingStopped, ForwardedAutoApproved,
	ForwardedAutoDenied, ForwardedPrompted, ForwardedApproved, ForwardedDenied, ForwardedRequesterGone,
	ForwardedSessionRecorded, ForwardingWarning, ForwardingError, RequestApproved, RequestDenied,
	RequestSessionApproved, ChainResolved, ChainDelegated, LinkShadow, LinkVerdict, LinkDisabled,
}

// TestEntryKeysAreNotSensitive holds Emit's premise: no key an entry
// writes is one Write would mask, so Emit need not look them up.
func TestEntryKeysAreNotSensitive(t *testing.T) {
	for _, by := range deciders(plainFacts) {
		for _, c := range entryCases(plainFacts, by) {
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
}

func TestEmitNilLogAndNilEntry(t *testing.T) {
	var l *Log
	if err := l.Emit(ForwardedServingStartedEntry{SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	l, _ = openTemp(t)
	if err := l.Emit(nil); err == nil {
		t.Fatal("Emit(nil) succeeded")
	}
}

func TestEmitAfterClose(t *testing.T) {
	l, path := openTemp(t)
	if err := l.Emit(ForwardedServingStartedEntry{SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := l.Emit(ForwardedServingStoppedEntry{SessionID: "s"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Emit after Close = %v, want ErrClosed", err)
	}
	if lines := readLines(t, path); len(lines) != 1 {
		t.Fatalf("%d lines, want 1", len(lines))
	}
}

// FuzzEmitMatchesWrite builds every entry from one fuzzed string and holds
// Emit to the generic path at a fuzzed width. The string is never empty:
// the facts an entry leaves out when empty (a path, a floor) are never
// empty where their call sites write them.
func FuzzEmitMatchesWrite(f *testing.F) {
	f.Add("perm-1", uint16(1000))
	f.Add("a\xffb\u2028\"<&>", uint16(3))
	f.Add(strings.Repeat("é", 40), uint16(7))
	f.Fuzz(func(t *testing.T, s string, width uint16) {
		cfg := config{width: int(width%2000) + 1, extension: DefaultExtension, now: fixedClock}
		if s == "" {
			s = "x"
		}
		facts := func(name string) string { return s }
		for _, by := range deciders(facts) {
			for _, c := range entryCases(facts, by) {
				var emitted bytes.Buffer
				l := newLog(&emitted, nil, cfg)
				if err := l.Emit(c.entry); err != nil {
					t.Fatal(err)
				}
				if generic := genericEntryLine(l, c.entry.Event(), c.details); emitted.String() != generic {
					t.Fatalf("%s, width %d:\nEmit    %s\ngeneric %s", c.name, cfg.width, emitted.String(), generic)
				}
			}
		}
	})
}
