package rules

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExplainGolden pins Explain's text and JSON for the kinds of answer
// `broker check` prints.
func TestExplainGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "explain", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	yoloData := bytes.Replace(data, []byte(`"permission": {`), []byte(`"yoloMode": true, "permission": {`), 1)
	policy := func(doc []byte, grants ...SessionGrant) *Policy {
		cfg, err := Parse("config.json", doc)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPolicy(cfg, Options{Home: testHome, Protected: []string{mailboxRoot, agentDir}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Sessions().Record(WidthProven, grants...); err != nil {
			t.Fatal(err)
		}
		return p
	}
	defaultCfg, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	defaultPolicy, err := NewPolicy(defaultCfg, Options{Home: testHome})
	if err != nil {
		t.Fatal(err)
	}
	plain := policy(data)
	tests := []struct {
		name string
		p    *Policy
		q    Query
	}{
		{"default-force-push", defaultPolicy, Query{Surface: "bash", MatchValues: []string{"git push --force origin main"}}},
		{"default-git-status", defaultPolicy, Query{Surface: "bash", MatchValues: []string{"git status --short"}}},
		{"default-ask", defaultPolicy, Query{Surface: "bash", MatchValues: []string{"make test"}}},
		{"agent-override", plain, Query{Surface: "bash", MatchValues: []string{"git push origin main"}, Agent: "Explore"}},
		{"agent-vouched", plain, Query{Surface: "bash", MatchValues: []string{"git push --force origin main"}, Agent: "Explore", Isolated: true, UID: 61002}},
		{"agent-not-vouched", plain, Query{Surface: "bash", MatchValues: []string{"git push --force origin main"}, Agent: "Explore", Isolated: true, UID: 61003}},
		{"agent-not-vouched-units", plain, Query{Surface: "bash", MatchValues: []string{"git status && git push origin main"}, Agent: "Explore", Isolated: true, UID: 61003}},
		{"agent-without-overrides", plain, Query{Surface: "bash", MatchValues: []string{"git push origin main"}, Agent: "Plan"}},
		{"family-fold", plain, Query{Surface: "path", MatchValues: []string{"/repo/.env", ".env"}}},
		{"session-grant", policy(data, SessionGrant{Surface: "bash", Pattern: "git push *"}), Query{Surface: "bash", MatchValues: []string{"git push --force"}}},
		{"session-grant-over-ask", policy(data, SessionGrant{Surface: "bash", Pattern: "git push *"}), Query{Surface: "bash", MatchValues: []string{"git push origin main"}}},
		{"path-aliases", plain, Query{Surface: "path_write", MatchValues: []string{"/repo/link/x", "link/x", "/srv/other/x"}, BoundaryValue: ptr("/srv/other/x")}},
		{"path-cleaned", plain, Query{Surface: "path_write", MatchValues: []string{"/repo/../etc/cron.d/x"}, BoundaryValue: ptr("/repo/../etc/cron.d/x")}},
		{"floor", plain, Query{Surface: "bash", MatchValues: []string{"git status"}, Floor: "<opaque-bash-wrapper>"}},
		{"yolo-floor", policy(yoloData), Query{Surface: "bash", MatchValues: []string{"git status"}, Floor: "<opaque-bash-wrapper>"}},
		{"yolo-ask", policy(yoloData), Query{Surface: "bash", MatchValues: []string{"make"}}},
		{"asking-units", plain, Query{Surface: "bash", MatchValues: []string{"git status"},
			AskingUnits: []AskingUnit{{Command: "git status"}, {Command: "git push --force-with-lease"}}}},
		{"guard", policy(yoloData, SessionGrant{Surface: "bash", Pattern: "*"}), Query{Surface: "bash", MatchValues: []string{"cat > ~/.pi/agent/sessions/permission-forwarding/sessions/p/responses/x.json"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.p.Explain(tt.q)
			var out strings.Builder
			if err := e.WriteText(&out); err != nil {
				t.Fatal(err)
			}
			out.WriteString("\n--- json\n")
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(e); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("explain", tt.name+".golden"), out.String())

			// Explain and Resolve never disagree.
			d := tt.p.Resolve(tt.q)
			if d.Action != e.Action || d.Reason != e.Reason {
				t.Errorf("Resolve says %s %q, Explain %s %q", d.Action, d.Reason, e.Action, e.Reason)
			}
		})
	}
}

func ptr(s string) *string { return &s }
