package reviewlog

import (
	"bytes"
	"testing"

	"github.com/seed6639df8c/courier/provenance"
)

// natsCases are the NATS bridge's entries beside the maps of the same
// facts, as TestEmitMatchesWrite holds the serve entries.
func natsCases(f facts) []entryCase {
	id, subject, owner, digest, reason := f("id"), f("subject"), f("owner"), f("digest"), f("reason")
	return []entryCase{
		{"nats_bridged", NATSRequestBridgedEntry{RequestID: id, Owner: owner, Subject: subject, RequestSHA256: digest},
			map[string]any{"requestId": id, "owner": owner, "subject": subject, "requestSha256": digest}},
		{"nats_refused", NATSRequestRefusedEntry{Subject: subject, Owner: owner, RequestID: id, Reason: reason, Answered: true},
			map[string]any{"subject": subject, "owner": owner, "requestId": id, "reason": reason, "answered": true}},
		{"nats_refused_bare", NATSRequestRefusedEntry{Subject: subject, Reason: reason},
			map[string]any{"subject": subject, "reason": reason, "answered": false}},
		{"nats_published", NATSResponsePublishedEntry{RequestID: id, Owner: owner, Subject: subject},
			map[string]any{"requestId": id, "owner": owner, "subject": subject}},
		{"nats_published_earlier", NATSResponsePublishedEntry{RequestID: id, Owner: owner, Subject: subject,
			AnsweredEarlier: &EarlierAnswer{Resolution: "denied_with_reason", DenialReason: reason, DecidedBy: provenance.Unavailable{Reason: reason}}},
			map[string]any{"requestId": id, "owner": owner, "subject": subject, "answeredEarlier": true, "resolution": "denied_with_reason",
				"denialReason": reason, "decidedBy": provenance.Unavailable{Reason: reason}}},
		{"nats_withdrawn", NATSRequestWithdrawnEntry{RequestID: id, Owner: owner, Subject: subject},
			map[string]any{"requestId": id, "owner": owner, "subject": subject}},
	}
}

func TestNATSEntriesMatchWrite(t *testing.T) {
	seen := map[string]bool{}
	for _, width := range []int{1, 3, 40, DefaultFieldWidth} {
		for fname, f := range map[string]facts{"plain": plainFacts, "hostile": hostileFacts} {
			for _, c := range natsCases(f) {
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
					t.Fatalf("%s, width %d, %s facts:\nEmit  %s\nWrite %s", c.name, width, fname, emitted.String(), written.String())
				}
				if generic := genericEntryLine(l, c.entry.Event(), c.details); emitted.String() != generic {
					t.Fatalf("%s, width %d, %s facts:\nEmit    %s\ngeneric %s", c.name, width, fname, emitted.String(), generic)
				}
				seen[c.entry.Event()] = true
			}
		}
	}
	for _, event := range []string{NATSRequestBridged, NATSRequestRefused, NATSResponsePublished, NATSRequestWithdrawn} {
		if !seen[event] {
			t.Errorf("no golden case for %s", event)
		}
	}
	for _, c := range natsCases(plainFacts) {
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
