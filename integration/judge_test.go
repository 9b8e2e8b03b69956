package integration

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestJudgeScripts runs testdata/judge/*.txtar: the real
// courier-authz-judge as a link of broker serve, calling a scripted model
// endpoint in this test process (model-start), beside a human answering
// at the tty (tmux). $AUTHZ_JUDGE and $AUTHZ_JUDGE_SHA256 name the plugin
// for expand, $JUDGE_ETC is a directory of the script's own for the
// judge's config (see judgeConfigDir); model-start sets $MODEL_URL.
//
//	model-start TABLE             serve the OpenAI chat completions API on 127.0.0.1 from TABLE
//	model-grep [-count N] REGEX   the prompts the model received match REGEX (N of them); with !, none does
//	model-calls N                 the model was called exactly N times
//
// TABLE holds one rule a line, "KEY => ANSWER": a prompt that contains
// KEY is answered ANSWER (the assistant's text, the judge's JSON
// verdict), the first rule that matches wins, KEY * matches every
// prompt; a prompt no rule matches gets a 500, which the judge defers on
// (code transport) and the script sees. Blank lines and lines starting
// with # are skipped.
func TestJudgeScripts(t *testing.T) {
	etc := judgeConfigDir(t)
	bin := buildBinaries(t)
	judge := filepath.Join(bin, "courier-authz-judge")
	data, err := os.ReadFile(judge)
	if err != nil {
		t.Fatalf("the judge plugin was not built: %v", err)
	}
	sum := sha256.Sum256(data)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "judge"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("PI_CODING_AGENT_DIR", filepath.Join(env.WorkDir, "agent"))
			env.Setenv("ROOT", filepath.Join(env.WorkDir, "agent", "sessions", "permission-forwarding"))
			env.Setenv("AUTHZ_JUDGE", judge)
			env.Setenv("AUTHZ_JUDGE_SHA256", hex.EncodeToString(sum[:]))
			dir, err := os.MkdirTemp(etc, "script-")
			if err != nil {
				return err
			}
			env.Defer(func() { os.RemoveAll(dir) })
			env.Setenv("JUDGE_ETC", dir)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":       cmdExits,
			"expand":      cmdExpand,
			"waitfile":    cmdWaitFile,
			"waitgrep":    cmdWaitGrep,
			"tmux-start":  cmdTmuxStart,
			"tmux-wait":   cmdTmuxWait,
			"tmux-send":   cmdTmuxSend,
			"tmux-exit":   cmdTmuxExit,
			"model-start": cmdModelStart,
			"model-grep":  cmdModelGrep,
			"model-calls": cmdModelCalls,
		},
	})
}

// judgeConfigEtc is where a confined plugin may read its settings
// (docs/PLUGINS.md): the judge's config file must be under it, since the
// judge takes it from a file only and Landlock keeps the plugin from
// reading the script's $WORK.
const judgeConfigEtc = "/etc/courier"

// judgeConfigDir is a directory of this test's own under
// judgeConfigEtc, removed when the test ends (and judgeConfigEtc too,
// when the test created it). The test is skipped when it cannot be made
// (not root): there is nowhere else a confined judge could read a config.
func judgeConfigDir(t *testing.T) string {
	t.Helper()
	created := false
	if _, err := os.Stat(judgeConfigEtc); os.IsNotExist(err) {
		if err := os.Mkdir(judgeConfigEtc, 0o755); err != nil {
			t.Skipf("the judge reads its config under %s, which this user cannot create: %v", judgeConfigEtc, err)
		}
		created = true
	}
	dir, err := os.MkdirTemp(judgeConfigEtc, "courier-integration-")
	if err != nil {
		t.Skipf("the judge reads its config under %s, where this user cannot write: %v", judgeConfigEtc, err)
	}
	t.Cleanup(func() {
		os.RemoveAll(dir)
		if created {
			os.Remove(judgeConfigEtc)
		}
	})
	return dir
}

// scriptedModel is an OpenAI-compatible chat completions endpoint that
// answers from a table and keeps every prompt it was sent.
type scriptedModel struct {
	rules []modelRule

	mu      sync.Mutex
	prompts []string // each request's messages, joined
}

type modelRule struct{ key, answer string }

// models are the scripts' endpoints, by the script's $MODEL_URL.
var models sync.Map

func parseModelTable(text string) ([]modelRule, error) {
	var rules []modelRule
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, answer, ok := strings.Cut(line, " => ")
		if !ok {
			return nil, fmt.Errorf("line %d: want KEY => ANSWER", n)
		}
		rules = append(rules, modelRule{key: strings.TrimSpace(key), answer: strings.TrimSpace(answer)})
	}
	return rules, sc.Err()
}

// chatRequest is what the endpoint reads of a request: the messages,
// whose content is a string or a list of text parts.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, "not the chat completions API", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "not JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	var prompt strings.Builder
	for _, msg := range req.Messages {
		fmt.Fprintf(&prompt, "[%s]\n%s\n", msg.Role, messageText(msg.Content))
	}
	text := prompt.String()
	m.mu.Lock()
	m.prompts = append(m.prompts, text)
	m.mu.Unlock()

	answer, ok := "", false
	for _, rule := range m.rules {
		if rule.key == "*" || strings.Contains(text, rule.key) {
			answer, ok = rule.answer, true
			break
		}
	}
	if !ok {
		http.Error(w, `{"error":{"message":"no scripted answer for this prompt"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": "scripted-" + req.Model,
		"choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": answer},
		}},
		"usage": map[string]any{"prompt_tokens": len(text) / 4, "completion_tokens": len(answer) / 4, "total_tokens": (len(text) + len(answer)) / 4},
	})
}

func cmdModelStart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: model-start TABLE")
	}
	if ts.Getenv("MODEL_URL") != "" {
		ts.Fatalf("model-start: a model is already running for this script")
	}
	rules, err := parseModelTable(ts.ReadFile(args[0]))
	if err != nil {
		ts.Fatalf("model-start: %s: %v", args[0], err)
	}
	m := &scriptedModel{rules: rules}
	srv := httptest.NewServer(m) // on 127.0.0.1
	url := srv.URL + "/v1"
	models.Store(url, m)
	ts.Defer(func() {
		srv.Close()
		models.Delete(url)
	})
	ts.Setenv("MODEL_URL", url)
}

func scriptModel(ts *testscript.TestScript) *scriptedModel {
	v, ok := models.Load(ts.Getenv("MODEL_URL"))
	if !ok {
		ts.Fatalf("no model: run model-start first")
	}
	return v.(*scriptedModel)
}

func (m *scriptedModel) received() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.prompts...)
}

func cmdModelGrep(ts *testscript.TestScript, neg bool, args []string) {
	want := -1
	if len(args) == 3 && args[0] == "-count" {
		n, err := strconv.Atoi(args[1])
		if err != nil {
			ts.Fatalf("model-grep: -count %q", args[1])
		}
		want, args = n, args[2:]
	}
	if len(args) != 1 || neg && want >= 0 {
		ts.Fatalf("usage: model-grep [-count N] REGEX")
	}
	re, err := regexp.Compile(args[0])
	if err != nil {
		ts.Fatalf("model-grep: %v", err)
	}
	prompts := scriptModel(ts).received()
	n := 0
	for _, p := range prompts {
		if re.MatchString(p) {
			n++
		}
	}
	switch {
	case neg && n > 0:
		ts.Fatalf("%d of the %d prompts the model received match %q", n, len(prompts), args[0])
	case !neg && want < 0 && n == 0, !neg && want >= 0 && n != want:
		for i, p := range prompts {
			ts.Logf("prompt %d:\n%s", i+1, p)
		}
		ts.Fatalf("%d of the %d prompts the model received match %q, want %s", n, len(prompts), args[0], map[bool]string{true: "some", false: strconv.Itoa(want)}[want < 0])
	}
}

func cmdModelCalls(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: model-calls N")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("model-calls: %q is not a number", args[0])
	}
	if got := len(scriptModel(ts).received()); got != want {
		ts.Fatalf("the model was called %d times, want %d", got, want)
	}
}

// The scripted model's table reader, alone.
func TestParseModelTable(t *testing.T) {
	rules, err := parseModelTable("# comment\n\ngit push => {\"verdict\":\"deny\"}\n* => {\"verdict\":\"defer\"}\n")
	if err != nil || len(rules) != 2 || rules[0].key != "git push" || rules[1].answer != `{"verdict":"defer"}` {
		t.Fatalf("%+v, %v", rules, err)
	}
	if _, err := parseModelTable("no arrow\n"); err == nil {
		t.Fatal("a line without => was read")
	}
}
