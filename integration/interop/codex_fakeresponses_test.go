package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// codexFakeModel is a scripted OpenAI Responses endpoint for Codex CLI:
// POST /v1/responses, answered as server-sent events. It plays two
// parts, told apart by the conversation it is handed (every request
// carries the whole input so far, so the script needs no state of its
// own): the main agent spawns one subagent and waits for it; the
// subagent asks to run codexFakeModel.command with escalated
// permissions, which is what makes Codex ask for approval and so run
// the PermissionRequest hook. The tool-less request Codex sends to name
// the thread gets a line of text.
//
// Every request body is written to dir, numbered; the output the
// subagent's command got is kept for the test to read (execOutput).
type codexFakeModel struct {
	// command is what the subagent asks to run.
	command string
	// dir receives the request bodies (NNN-role.json).
	dir string

	srv *http.Server
	url string

	mu       sync.Mutex
	requests int
	// execOutputs holds each function_call_output the subagent got for
	// its command, in order, and execSeen is closed on the first.
	execOutputs []string
	execSeen    chan struct{}
	// failures are requests the script could not read; the test fails
	// on them at cleanup instead of from the server's goroutine.
	failures []string
}

// The markers that tell the two conversations apart. The subagent gets
// codexSubTask as its whole first message (spawn_agent without
// fork_context), so its input never holds the main agent's prompt.
const (
	codexMainTask = "MAIN-TASK: delegate the push to a subagent"
	codexSubTask  = "SUB-TASK: run the push"
	// The call ids of the script's tool calls.
	codexCallSpawn = "call_spawn_1"
	codexCallWait  = "call_wait_1"
	codexCallExec  = "call_exec_1"
	// codexJustification is the reason the subagent gives for escalating;
	// Codex hands it to the hook as tool_input.description.
	codexJustification = "needs to push"
)

// startCodexFakeModel serves the script on 127.0.0.1 until the test ends.
func startCodexFakeModel(t *testing.T, dir, command string) *codexFakeModel {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("fake model: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fake model: listening on 127.0.0.1: %v", err)
	}
	m := &codexFakeModel{command: command, dir: dir, execSeen: make(chan struct{}), url: "http://" + ln.Addr().String() + "/v1"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", m.serveResponses)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		m.fail(fmt.Sprintf("unexpected request %s %s", r.Method, r.URL))
		http.NotFound(w, r)
	})
	m.srv = &http.Server{Handler: mux}
	go func() { _ = m.srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = m.srv.Close()
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, f := range m.failures {
			t.Errorf("fake model: %s", f)
		}
	})
	return m
}

func (m *codexFakeModel) fail(msg string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failures = append(m.failures, msg)
}

// codexItem is the part of a Responses input item the script reads.
type codexItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

// codexRequest is the part of a Responses request the script reads.
type codexRequest struct {
	Input []codexItem       `json:"input"`
	Tools []json.RawMessage `json:"tools"`
}

// userText is the text of a user message item, or "".
func (it codexItem) userText() string {
	if it.Type != "message" || it.Role != "user" {
		return ""
	}
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(it.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// outputText is a function_call_output's output as text: Codex sends a
// string, or content items.
func (it codexItem) outputText() string {
	var s string
	if json.Unmarshal(it.Output, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(it.Output, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(it.Output)
}

func (m *codexFakeModel) serveResponses(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		m.fail(fmt.Sprintf("reading a request: %v", err))
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req codexRequest
	if err := json.Unmarshal(body, &req); err != nil {
		m.fail(fmt.Sprintf("request body: %v", err))
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	role, events := m.script(req)
	m.record(role, r.Header, body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i, ev := range events {
		if err := writeCodexEvent(w, ev); err != nil {
			m.fail(fmt.Sprintf("writing event %d to the %s: %v", i, role, err))
			return
		}
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// record writes one request, its headers first, to dir.
func (m *codexFakeModel) record(role string, h http.Header, body []byte) {
	m.mu.Lock()
	m.requests++
	n := m.requests
	m.mu.Unlock()
	headers, _ := json.Marshal(map[string]string{
		"x-codex-turn-metadata": h.Get("x-codex-turn-metadata"),
		"user-agent":            h.Get("user-agent"),
	})
	rec := fmt.Sprintf("{\"headers\":%s,\"body\":%s}\n", headers, body)
	name := filepath.Join(m.dir, fmt.Sprintf("%03d-%s.json", n, role))
	if err := os.WriteFile(name, []byte(rec), 0o644); err != nil {
		m.fail(fmt.Sprintf("recording request %d: %v", n, err))
	}
}

// script picks the reply to one request: who is asking, and the events.
func (m *codexFakeModel) script(req codexRequest) (string, []map[string]any) {
	if len(req.Tools) == 0 {
		return "title", codexTextReply("Push through a subagent")
	}
	sub := false
	outputs := map[string]string{}
	for _, it := range req.Input {
		if strings.Contains(it.userText(), codexSubTask) {
			sub = true
		}
		if it.Type == "function_call_output" {
			outputs[it.CallID] = it.outputText()
		}
	}
	if sub {
		out, ran := outputs[codexCallExec]
		if !ran {
			args, _ := json.Marshal(map[string]string{
				"cmd":                 m.command,
				"sandbox_permissions": "require_escalated",
				"justification":       codexJustification,
			})
			return "sub", codexCallReply(codexCallExec, "exec_command", "", string(args))
		}
		m.mu.Lock()
		m.execOutputs = append(m.execOutputs, out)
		if len(m.execOutputs) == 1 {
			close(m.execSeen)
		}
		m.mu.Unlock()
		return "sub", codexTextReply("SUB-DONE")
	}
	spawned, ok := outputs[codexCallSpawn]
	if !ok {
		args, _ := json.Marshal(map[string]any{"message": codexSubTask, "fork_context": false})
		return "main", codexCallReply(codexCallSpawn, "spawn_agent", "multi_agent_v1", string(args))
	}
	if _, ok := outputs[codexCallWait]; !ok {
		var agent struct {
			AgentID string `json:"agent_id"`
		}
		if err := json.Unmarshal([]byte(spawned), &agent); err != nil || agent.AgentID == "" {
			m.fail(fmt.Sprintf("spawn_agent output %q: want JSON with agent_id", spawned))
		}
		args, _ := json.Marshal(map[string]any{"targets": []string{agent.AgentID}, "timeout_ms": 120000})
		return "main", codexCallReply(codexCallWait, "wait_agent", "multi_agent_v1", string(args))
	}
	return "main", codexTextReply("MAIN-DONE")
}

// execOutput waits for the output the subagent's command got.
func (m *codexFakeModel) execOutput(ctx context.Context) (string, error) {
	select {
	case <-m.execSeen:
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.execOutputs[0], nil
	case <-ctx.Done():
		return "", fmt.Errorf("the subagent's command never returned an output to the model: %w", ctx.Err())
	}
}

// execOutputSeen reports whether the subagent's command returned, without
// waiting.
func (m *codexFakeModel) execOutputSeen() bool {
	select {
	case <-m.execSeen:
		return true
	default:
		return false
	}
}

// codexTextReply is a response of one assistant message.
func codexTextReply(text string) []map[string]any {
	id := "msg_" + codexSlug(text)
	added := map[string]any{"type": "message", "role": "assistant", "id": id, "status": "in_progress", "content": []any{}}
	done := map[string]any{"type": "message", "role": "assistant", "id": id, "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	return codexResponse(
		map[string]any{"type": "response.output_item.added", "output_index": 0, "item": added},
		map[string]any{"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": id, "delta": text},
		map[string]any{"type": "response.output_item.done", "output_index": 0, "item": done},
	)
}

// codexCallReply is a response of one function call; namespace is set for
// a namespaced tool (multi_agent_v1's spawn_agent, wait_agent).
func codexCallReply(callID, name, namespace, args string) []map[string]any {
	item := func(status, arguments string) map[string]any {
		it := map[string]any{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": name, "arguments": arguments, "status": status}
		if namespace != "" {
			it["namespace"] = namespace
		}
		return it
	}
	return codexResponse(
		map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item("in_progress", "")},
		map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item("completed", args)},
	)
}

// codexResponse wraps output events in response.created and
// response.completed.
func codexResponse(events ...map[string]any) []map[string]any {
	id := fmt.Sprintf("resp_%d", len(events))
	out := []map[string]any{{"type": "response.created", "response": map[string]any{"id": id}}}
	out = append(out, events...)
	return append(out, map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id,
		"usage": map[string]any{
			"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": 15,
		},
	}})
}

func writeCodexEvent(w io.Writer, ev map[string]any) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], data)
	return err
}

// codexSlug keeps the letters of s, for item ids.
func codexSlug(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		}
	}
	return b.String()
}
