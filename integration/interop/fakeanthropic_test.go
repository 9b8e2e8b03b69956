package interop

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// fakeAnthropic is a scripted Anthropic Messages endpoint on 127.0.0.1,
// the only endpoint Claude Code calls (POST /v1/messages?beta=true,
// streamed). Its script: the main agent starts a synchronous subagent
// (the Agent tool, run_in_background false) with subagentPrompt; the
// subagent runs command with the Bash tool; after a tool_result, either
// ends its turn with text. Every request body is kept in the case's logs;
// the tool_results the model received are kept for the assertions.
type fakeAnthropic struct {
	c       *Case
	command string
	srv     *httptest.Server

	mu      sync.Mutex
	n       int
	results []toolResult
	errs    []string
}

// toolResult is one tool_result block a request carried.
type toolResult struct {
	// Subagent says whose request carried it.
	Subagent bool
	// ToolUseID is the tool_use it answers (toolu_main_… or toolu_sub_…).
	ToolUseID string
	// Text is its content, text blocks joined.
	Text    string
	IsError bool
}

// subagentMarker is in a subagent's first system block (observed, 2.1.328).
const subagentMarker = "cc_is_subagent=true"

// newFakeAnthropic starts the endpoint; it stops when the test ends.
func newFakeAnthropic(c *Case, command string) *fakeAnthropic {
	f := &fakeAnthropic{c: c, command: command}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	c.T.Cleanup(f.srv.Close)
	return f
}

// URL is the endpoint's base URL (ANTHROPIC_BASE_URL).
func (f *fakeAnthropic) URL() string { return f.srv.URL }

// messagesRequest is what the script reads of a Messages request.
type messagesRequest struct {
	System   json.RawMessage         `json:"system"`
	Stream   bool                    `json:"stream"`
	Tools    []struct{ Name string } `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// contentBlock is one block of a message's content.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	if err != nil {
		f.fail("request %d: reading the body: %v", n, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		f.fail("request %d: unexpected %s %s", n, r.Method, r.URL)
		http.NotFound(w, r)
		return
	}
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		f.fail("request %d: decoding the body: %v", n, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sub := strings.Contains(firstSystemText(req.System), subagentMarker)
	who := "main"
	if sub {
		who = "sub"
	}
	_ = os.WriteFile(f.c.LogPath(fmt.Sprintf("anthropic-%02d-%s.json", n, who)), body, 0o600)
	if !req.Stream {
		f.fail("request %d: not streamed", n)
		http.Error(w, "want stream:true", http.StatusBadRequest)
		return
	}

	results := lastToolResults(req, sub)
	f.mu.Lock()
	f.results = append(f.results, results...)
	f.mu.Unlock()

	want := "Agent"
	if sub {
		want = "Bash"
	}
	var reply []sseEvent
	switch {
	case len(results) > 0 || !hasTool(req, want):
		// After the tool ran (or was refused), or a request that is not
		// the agent loop (no such tool): end the turn.
		reply = textReply(n, "Done.")
	case sub:
		reply = toolUseReply(n, fmt.Sprintf("toolu_sub_%02d", n), "Bash",
			map[string]any{"command": f.command, "description": "Run the task's command"})
	default:
		reply = toolUseReply(n, fmt.Sprintf("toolu_main_%02d", n), "Agent",
			map[string]any{"description": "Run the command", "subagent_type": "general-purpose",
				"prompt": "Run this command with the Bash tool: " + f.command, "run_in_background": false})
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for _, e := range reply {
		data, _ := json.Marshal(e.data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, data)
		if flusher != nil {
			flusher.Flush()
		}
	}
}

// fail records a script error, reported by check.
func (f *fakeAnthropic) fail(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// check fails the test with the script's errors, if any.
func (f *fakeAnthropic) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.errs {
		t.Errorf("fake Anthropic endpoint: %s", e)
	}
}

// subagentResults are the tool_results the subagent's requests carried.
func (f *fakeAnthropic) subagentResults() []toolResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []toolResult
	for _, r := range f.results {
		if r.Subagent {
			out = append(out, r)
		}
	}
	return out
}

// firstSystemText is the system prompt's first block's text (or the whole
// system prompt when it is a string).
func firstSystemText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []contentBlock
	if json.Unmarshal(raw, &blocks) == nil && len(blocks) > 0 {
		return blocks[0].Text
	}
	return ""
}

func hasTool(req messagesRequest, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// lastToolResults are the tool_result blocks of the user messages after
// the last assistant message: the answers to the model's last tool calls.
// (Claude Code interleaves messages of role "system" too.)
func lastToolResults(req messagesRequest, sub bool) []toolResult {
	var out []toolResult
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role != "assistant"; i-- {
		var blocks []contentBlock
		if req.Messages[i].Role != "user" || json.Unmarshal(req.Messages[i].Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" {
				out = append(out, toolResult{Subagent: sub, ToolUseID: b.ToolUseID, Text: blockText(b.Content), IsError: b.IsError})
			}
		}
	}
	return out
}

// blockText is a tool_result's content: a string, or text blocks joined.
func blockText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []contentBlock
	_ = json.Unmarshal(raw, &blocks)
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// sseEvent is one server-sent event of a streamed reply.
type sseEvent struct {
	name string
	data map[string]any
}

var usage = map[string]any{"input_tokens": 10, "output_tokens": 1,
	"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}

func messageStart(n int) sseEvent {
	return sseEvent{"message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%02d", n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}}}
}

func messageEnd(stop string) []sseEvent {
	return []sseEvent{
		{"message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}}},
		{"message_stop", map[string]any{"type": "message_stop"}},
	}
}

// textReply ends the turn with text.
func textReply(n int, text string) []sseEvent {
	return append([]sseEvent{messageStart(n),
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}}},
		{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": text}}},
		{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
	}, messageEnd("end_turn")...)
}

// toolUseReply calls one tool.
func toolUseReply(n int, id, name string, input map[string]any) []sseEvent {
	in, _ := json.Marshal(input)
	return append([]sseEvent{messageStart(n),
		{"content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}}},
		{"content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}}},
		{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
	}, messageEnd("tool_use")...)
}
