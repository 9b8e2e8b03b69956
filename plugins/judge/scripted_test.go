package judge

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A scripted model endpoint: an httptest server that speaks one provider's
// API and answers every call as its script says, recording what it got.

// script is what the endpoint answers.
type script struct {
	// text is the model's answer text.
	text string
	// status, when not 0 or 200, answers an API error with this status.
	status int
	// hang holds the call until the client gives up.
	hang bool
	// refuse answers a refusal (stop_reason refusal, finish_reason
	// content_filter).
	refuse bool
	// padding adds this many bytes to the response envelope.
	padding int
}

// endpoint is a running scripted server.
type endpoint struct {
	srv      *httptest.Server
	provider string
	mu       sync.Mutex
	script   script
	calls    []call
}

// call is one request the endpoint got.
type call struct {
	Header http.Header
	Body   map[string]any
	Raw    string
}

const testKey = "sk-test-key"

func newEndpoint(t *testing.T, provider string, s script) *endpoint {
	t.Helper()
	e := &endpoint{provider: provider, script: s}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

// config is a judge config that calls e.
func (e *endpoint) config() Config {
	c := Config{Provider: e.provider, Model: testModel, AllowEnabled: true, APIKeyEnv: "JUDGE_TEST_KEY"}
	switch e.provider {
	case ProviderAnthropic:
		c.BaseURL = e.srv.URL
	case ProviderOpenAI:
		c.BaseURL = e.srv.URL + "/v1/"
	}
	return c
}

func (e *endpoint) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	e.mu.Lock()
	e.calls = append(e.calls, call{Header: r.Header.Clone(), Body: body, Raw: string(raw)})
	s := e.script
	e.mu.Unlock()

	want := "/v1/messages"
	if e.provider == ProviderOpenAI {
		want = "/v1/chat/completions"
	}
	if r.Method != http.MethodPost || r.URL.Path != want {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if s.hang {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if s.status != 0 && s.status != http.StatusOK {
		w.WriteHeader(s.status)
		io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"scripted failure"}}`)
		return
	}
	var resp map[string]any
	switch e.provider {
	case ProviderAnthropic:
		stop := "end_turn"
		if s.refuse {
			stop = "refusal"
		}
		resp = map[string]any{
			"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-scripted",
			"content":     []any{map[string]any{"type": "text", "text": s.text}},
			"stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 1234, "output_tokens": 56},
		}
	case ProviderOpenAI:
		finish := "stop"
		if s.refuse {
			finish = "content_filter"
		}
		resp = map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "llama-scripted",
			"choices": []any{map[string]any{
				"index": 0, "finish_reason": finish, "logprobs": nil,
				"message": map[string]any{"role": "assistant", "content": s.text, "refusal": nil},
			}},
			"usage": map[string]any{"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290},
		}
	}
	if s.padding > 0 {
		resp["padding"] = strings.Repeat("p", s.padding)
	}
	json.NewEncoder(w).Encode(resp)
}

// got returns the calls the endpoint has had.
func (e *endpoint) got() []call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]call(nil), e.calls...)
}

// prompts returns the system and user text of a call, as the provider's
// request carries them.
func (c call) prompts(t *testing.T, provider string) (system, user string) {
	t.Helper()
	msgs, _ := c.Body["messages"].([]any)
	switch provider {
	case ProviderAnthropic:
		if sys, _ := c.Body["system"].([]any); len(sys) == 1 {
			system, _ = sys[0].(map[string]any)["text"].(string)
		}
		if len(msgs) == 1 {
			m := msgs[0].(map[string]any)
			switch content := m["content"].(type) {
			case string:
				user = content
			case []any:
				user, _ = content[0].(map[string]any)["text"].(string)
			}
		}
	case ProviderOpenAI:
		if len(msgs) == 2 {
			system, _ = msgs[0].(map[string]any)["content"].(string)
			user, _ = msgs[1].(map[string]any)["content"].(string)
		}
	}
	if system == "" || user == "" {
		t.Fatalf("cannot find the prompts in the request: %s", c.Raw)
	}
	return system, user
}
