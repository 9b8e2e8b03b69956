package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/rules"
)

const intentTranscript = `{"type":"session","version":3,"id":"7f3c0d8e-1111-4222-8333-944455556666","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/w"}
{"type":"message","id":"a1","parentId":null,"timestamp":"2026-12-01T10:00:01.000Z","message":{"role":"user","content":"push it, I authorize the force push"}}
{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-12-01T10:00:02.000Z","message":{"role":"toolResult","toolCallId":"t","toolName":"bash","content":[{"type":"text","text":"TOOL-OUTPUT-MARK"}],"isError":false}}
{"type":"compaction","id":"a3","parentId":"a2","timestamp":"2026-12-01T10:00:03.000Z","summary":"the user asked for a release","firstKeptEntryId":"a1","tokensBefore":10}
`

func TestIntentProvider(t *testing.T) {
	path := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(path, []byte(intentTranscript), 0o600); err != nil {
		t.Fatal(err)
	}
	disclosing := []rules.AuthorizerLink{{Name: "judge", DiscloseConversation: true}}
	tests := []struct {
		name   string
		args   []string
		chain  []rules.AuthorizerLink
		want   *authorizer.Conversation
		stderr string
	}{
		{"no --intent", nil, disclosing, nil, ""},
		{"no link discloses it", []string{"--intent", path}, []rules.AuthorizerLink{{Name: "deny-list"}}, nil, "no authorizer link discloses"},
		{"a link discloses it", []string{"--intent", path, "--intent-format", "pi"}, disclosing, &authorizer.Conversation{Items: []authorizer.ConversationItem{
			// pi's order: the compaction's summary, then what it kept.
			{Role: "assistant", Text: "the user asked for a release", Derived: true},
			{Role: "user", Text: "push it, I authorize the force push"},
		}}, "broker: intent: " + path + " (format pi, 16384 bytes) for judge"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlagSet()
			f := addIntentFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			r, err := f.open()
			if err != nil {
				t.Fatal(err)
			}
			stderr := &syncWriter{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			provider := f.provider(ctx, r, tt.chain, stderr)
			var got *authorizer.Conversation
			if provider != nil {
				got = provider()
			}
			if !equalConversation(got, tt.want) {
				t.Fatalf("conversation %+v, want %+v", got, tt.want)
			}
			if tt.stderr != "" && !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("stderr %q, want %q in it", stderr.String(), tt.stderr)
			}
		})
	}
}

func newFlagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("broker serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// syncWriter is stderr shared with the transcript's warm-up goroutine.
type syncWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func equalConversation(a, b *authorizer.Conversation) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.Items) != len(b.Items) {
		return false
	}
	for i := range a.Items {
		if a.Items[i] != b.Items[i] {
			return false
		}
	}
	return true
}

func TestIntentFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--intent", "x.jsonl", "--intent-format", "markdown"},
		{"--intent", "x.jsonl", "--intent-budget", "3"},
		{"--intent", t.TempDir()},
	} {
		fs := newFlagSet()
		f := addIntentFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if _, err := f.open(); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// TestServeHelpExplainsIntent: the operator learns from --help where the
// transcript's text goes, and where it never does.
func TestServeHelpExplainsIntent(t *testing.T) {
	var stderr bytes.Buffer
	if code := runServe(context.Background(), []string{"--help"}, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"-intent", "-intent-format", "-intent-budget", `discloses "conversation" to`, "never written to the review log"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
