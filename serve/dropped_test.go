package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// TestDroppedGrantsAreOneEntryPerAsk is review finding 8: an ask that
// suggests 100 grants of 900 bytes, none admissible, wrote one warning per
// dropped grant (65 lines, some 70 KB), so that a few dozen asks rotated
// every decision out of the review log. The drops of one admission are now
// one entry: how many, and the first few with why, each cut short.
func TestDroppedGrantsAreOneEntryPerAsk(t *testing.T) {
	tests := []struct {
		name      string
		suggested []wire.SuggestedGrant
		want      []string // in the entry's message and error, in order
		wantNot   []string
	}{
		{
			name:      "a flood of long grants",
			suggested: longGrants(100, 900),
			want: []string{
				"100 session grants were dropped, not offered for the whole session",
				`bash "npm test 000 ` + strings.Repeat("x", 40), "…\" (",
				`bash "npm test 004 `, "; and 95 more",
			},
			wantNot: []string{`bash "npm test 005 `, strings.Repeat("x", 100)},
		},
		{
			name:      "one grant",
			suggested: []wire.SuggestedGrant{{Surface: "bash", Pattern: "*"}},
			want:      []string{"1 session grant was dropped, not offered for the whole session", `bash "*" (`},
			wantNot:   []string{"more"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			term := newHeldTerminal()
			f, logPath := hardenedFixture(t, term)
			req := askWith(t, "child", "npm test", tt.suggested)
			result := make(chan decision.Decision, 1)
			go func() { result <- f.client().Forward(t.Context(), req) }()
			<-term.asked
			term.answer <- decision.Decision{State: decision.StateApproved, DecidedBy: provenance.User{Via: provenance.ViaDialog}}
			if d := <-result; !d.Approved() {
				t.Fatalf("npm test: %+v", d)
			}
			data, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			var warnings []string
			for line := range bytes.Lines(data) {
				var e struct{ Event, Message, Error, RequestID string }
				if err := json.Unmarshal(line, &e); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				if e.Event == reviewlog.ForwardingWarning && e.RequestID == req.ID {
					warnings = append(warnings, e.Message+": "+e.Error)
					if len(line) > 2048 {
						t.Errorf("the summary is %d bytes", len(line))
					}
				}
			}
			if len(warnings) != 1 {
				t.Fatalf("the ask wrote %d warnings, want 1:\n%s", len(warnings), strings.Join(warnings, "\n"))
			}
			rest := warnings[0]
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("the summary %q lacks %q (in order)", warnings[0], w)
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tt.wantNot {
				if strings.Contains(warnings[0], w) {
					t.Errorf("the summary %q holds %q", warnings[0], w)
				}
			}
		})
	}
}

// longGrants are n bash grants of size bytes that cover nothing asked.
func longGrants(n, size int) []wire.SuggestedGrant {
	gs := make([]wire.SuggestedGrant, n)
	for i := range gs {
		p := fmt.Sprintf("npm test %03d ", i)
		gs[i] = wire.SuggestedGrant{Surface: "bash", Pattern: p + strings.Repeat("x", size-len(p))}
	}
	return gs
}
