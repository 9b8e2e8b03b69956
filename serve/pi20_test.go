package serve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// TestPi20RequestsFromTheReference feeds every request file a real pi
// 20.7.3 child wrote (testdata/pi20, kept byte for byte) to a broker
// serving their target session: each has no accessIntent, so it floors to
// the terminal, which sees the child's message and its old-shape grant
// suggestion; the response written back parses by the field rules of a
// 20.7.3 child.
func TestPi20RequestsFromTheReference(t *testing.T) {
	files, err := filepath.Glob("testdata/pi20/request.*.json")
	if err != nil || len(files) != 3 {
		t.Fatalf("want the 3 reference requests, got %v (%v)", files, err)
	}
	layout := mailbox.Layout{Root: t.TempDir()}
	cfg, err := rules.Parse("test.json", []byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	policy, _ := rules.NewPolicy(cfg, rules.Options{})
	journal, _ := grants.Open(layout, grants.Broker, "parent-fixture")
	term := newHeldTerminal()
	b := &Broker{Layout: layout, Session: "parent-fixture", Policy: policy, Terminal: term, Journal: journal}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() { cancel(); <-done }()

	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			// Fresh, or the broker would sweep it as long abandoned.
			fresh := regexp.MustCompile(`"createdAt":\d+`).ReplaceAll(data, []byte(`"createdAt":`+jsonInt(time.Now().UnixMilli())))
			id := raw["id"].(string)
			writeRequestTo(t, layout, "parent-fixture", id+".json", fresh)

			var a Ask
			select {
			case a = <-term.asked:
			case <-time.After(10 * time.Second):
				t.Fatal("the request never reached the terminal")
			}
			if a.Request.AccessIntent != nil || a.Resolution.Action != "" {
				t.Errorf("a 20.x request resolved by rules: %+v", a.Resolution)
			}
			if a.Request.Message != raw["message"] || a.Request.Message == "" {
				t.Errorf("the terminal did not get the child's message: %q", a.Request.Message)
			}
			sa := raw["sessionApproval"].(map[string]any)
			if a.Request.SessionApproval == nil || !a.Request.SessionApproval.Legacy ||
				a.Request.SessionApproval.Grants[0].Surface != sa["surface"] || a.Request.SessionApproval.Grants[0].Pattern != sa["patterns"].([]any)[0] {
				t.Errorf("grant suggestion: %+v", a.Request.SessionApproval)
			}
			term.answer <- decision.Deny("Use pnpm instead", provenance.User{Via: provenance.ViaDialog})

			respPath, _ := layout.ResponsePath("parent-fixture", id)
			waitFor(t, respPath)
			resp, err := os.ReadFile(respPath)
			if err != nil {
				t.Fatal(err)
			}
			assertPi20Readable(t, resp)
		})
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// assertPi20Readable checks a response the way pi 20.7.3's child reads
// one: approved a boolean, state one of its five, responderSessionId a
// string, respondedAt a number, denialReason a string when present.
func assertPi20Readable(t *testing.T, data []byte) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not JSON: %s", data)
	}
	if _, ok := m["approved"].(bool); !ok {
		t.Errorf("approved: %v", m["approved"])
	}
	switch m["state"] {
	case "approved", "approved_for_session", "denied", "denied_with_reason":
	default:
		t.Errorf("state %v is not one a 20.7.3 child knows", m["state"])
	}
	if s, ok := m["responderSessionId"].(string); !ok || strings.TrimSpace(s) == "" {
		t.Errorf("responderSessionId: %v", m["responderSessionId"])
	}
	if _, ok := m["respondedAt"].(float64); !ok {
		t.Errorf("respondedAt: %v", m["respondedAt"])
	}
	if r, present := m["denialReason"]; present {
		if _, ok := r.(string); !ok {
			t.Errorf("denialReason: %v", r)
		}
	}
}

// waitFor waits for path to appear, on inotify, with a deadline.
func waitFor(t *testing.T, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	w, err := mailbox.WatchFile(ctx, path, mailbox.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Wait(ctx); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// With the operator's opt-in, a 20.x bash request is resolved by the rules
// on its display value, and the provenance says so; path requests never.
func TestLegacyBashDisplayMatch(t *testing.T) {
	term := newHeldTerminal()
	f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, term, func(b *Broker) { b.LegacyBashDisplayMatch = true })
	old := func(surface, value string) wire.Request {
		r := ask(t, value)
		r.AccessIntent = nil
		r.Surface = surface
		return r
	}
	d := f.client().Forward(t.Context(), old("bash", "npm install left-pad"))
	rule, ok := provenance.Effective(d.DecidedBy).(provenance.Rule)
	if d.State != decision.StateDeniedWithReason || !ok || *rule.Origin != "display_value/global" || *rule.Pattern != "npm *" {
		t.Fatalf("bash by display value: %+v (%#v)", d, d.DecidedBy)
	}
	if d := f.client().Forward(t.Context(), old("bash", "git status")); !d.Approved() {
		t.Errorf("allowed command: %+v", d)
	}
	// A path surface still floors to the terminal.
	go func() { <-term.asked; term.answer <- decision.Deny("", provenance.User{Via: provenance.ViaDialog}) }()
	if d := f.client().Forward(t.Context(), old("read", "/etc/hosts")); !reflect.DeepEqual(provenance.Effective(d.DecidedBy), provenance.User{Via: provenance.ViaDialog}) {
		t.Errorf("path request: %+v", d)
	}
}
