package agenthook

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// stub is a Forwarder that records every request and answers with the
// decisions it is given, in order (the last one repeated).
type stub struct {
	answers  []decision.Decision
	requests []wire.Request
	local    []wire.Request
}

func (s *stub) Forward(_ context.Context, req wire.Request) decision.Decision {
	s.requests = append(s.requests, req)
	i := min(len(s.requests), len(s.answers)) - 1
	return s.answers[i]
}

func (s *stub) LogLocal(req wire.Request, _ decision.Decision) { s.local = append(s.local, req) }

// testHook is a Hook with a fixed clock and ids, and no mailbox.
func testHook(cli CLI, f Forwarder) *Hook {
	n := 0
	return &Hook{
		CLI: cli, Parent: DefaultParent, Forwarder: f, Home: "/home/ada",
		NewID: func() (string, error) { n++; return fmt.Sprintf("perm-%04d", n), nil },
		Now:   func() time.Time { return time.UnixMilli(1796031854191) },
	}
}

// The deciders of the decision kinds the goldens cover.
var (
	parent    = "courier"
	forceRule = provenance.Nest(&parent, provenance.Rule{Surface: "bash", Pattern: provenance.Str("git push --force*"), Origin: provenance.Str("global")})
	byUser    = provenance.Nest(&parent, provenance.User{Via: provenance.ViaDialog})
	allowRule = provenance.Nest(&parent, provenance.Rule{Surface: "bash", Pattern: provenance.Str("git push origin feature*"), Origin: provenance.Str("global")})
)

// decisions are the decision kinds, by the name their goldens carry.
var decisions = []struct {
	name        string
	d           decision.Decision
	unavailable UnavailableMode
}{
	{"allow", decision.Allow(allowRule), UnavailableNone},
	{"allow_session", decision.Decision{State: decision.StateApprovedForSession, DecidedBy: byUser}, UnavailableNone},
	{"allow_whole_session", decision.Allow(byUser), UnavailableNone},
	{"deny_rule", decision.Deny("Force-pushing rewrites shared history; push to a new branch instead", forceRule), UnavailableNone},
	{"deny_user", decision.Deny("", byUser), UnavailableNone},
	{"deny_user_reason", decision.Deny("not on main, please", byUser), UnavailableNone},
	{"unavailable", decision.NobodyAnswered("Session 'courier' did not answer within 300s"), UnavailableNone},
	{"unavailable_deny", decision.NobodyAnswered("Session 'courier' did not answer within 300s"), UnavailableDeny},
}

// TestOutputGolden renders each decision kind for each agent and event,
// from the captured subagent events, to the exact bytes the agent reads.
func TestOutputGolden(t *testing.T) {
	events := []struct {
		cli  CLI
		file string
	}{
		{ClaudeCode, "claude_sub_permissionrequest"},
		{ClaudeCode, "claude_sub_pretooluse"},
		{Codex, "codex_sub_permissionrequest"},
		{Codex, "codex_sub_pretooluse"},
	}
	for _, ev := range events {
		data := readEvent(t, ev.file)
		for _, dk := range decisions {
			name := ev.file + "_" + dk.name
			t.Run(name, func(t *testing.T) {
				h := testHook(ev.cli, &stub{answers: []decision.Decision{dk.d}})
				h.Unavailable = dk.unavailable
				res := h.Handle(context.Background(), data)
				golden(t, filepath.Join("testdata", "output", name+".golden"), res.Stdout)
				if dk.d.Approved() != (res.Answer.Verdict == VerdictAllow) {
					t.Errorf("verdict %v for a decision approved=%v", res.Answer.Verdict, dk.d.Approved())
				}
				if len(res.Stdout) > 0 && !json.Valid(res.Stdout) {
					t.Errorf("stdout is not JSON: %q", res.Stdout)
				}
			})
		}
	}
}

// TestRequestGolden maps every captured event and every tool family to
// the requests it forwards (none for a main agent's, left to the agent;
// with --main forward, the agent's session's).
func TestRequestGolden(t *testing.T) {
	t.Setenv("HOME", "/home/ada")
	files, err := filepath.Glob(filepath.Join("testdata", "events", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no events: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			data := readEvent(t, name)
			cli := ClaudeCode
			if strings.HasPrefix(name, "codex") || name == "tool_apply_patch" {
				cli = Codex
			}
			out := map[string]any{}
			for _, main := range []MainMode{MainSkip, MainForward} {
				s := &stub{answers: []decision.Decision{decision.Allow(allowRule)}}
				h := testHook(cli, s)
				h.Main = main
				res := h.Handle(context.Background(), data)
				reqs := make([]json.RawMessage, len(s.requests))
				for i, r := range s.requests {
					r.RequesterPID = 0 // the test's own
					if reqs[i], err = wire.EncodeRequest(r); err != nil {
						t.Fatal(err)
					}
				}
				key := "requests"
				if main == MainForward {
					key = "requestsWithMainForward"
				}
				out[key] = reqs
				out[key+"Verdict"] = res.Answer.Verdict.String()
			}
			got, err := json.MarshalIndent(out, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "requests", name+".golden"), append(got, '\n'))
		})
	}
}

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "events", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./agenthook -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\ngot:  %q\nwant: %q", path, got, want)
	}
}
