package judge

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/authorizer"
)

func testEnv(k string) string {
	if k == "JUDGE_TEST_KEY" {
		return testKey
	}
	return ""
}

func newTestJudge(t *testing.T, c Config) *Judge {
	t.Helper()
	c, err := ParseConfig(mustJSON(t, c))
	if err != nil {
		t.Fatal(err)
	}
	j, err := New(c, testEnv)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

var providers = []string{ProviderAnthropic, ProviderOpenAI}

// intent is a conversation in which the user asks for what the test asks
// run.
var intent = direct(user("Clean the build output and rebuild."))

// TestScripted runs the judge against a scripted endpoint of each API:
// the model's answer, or the endpoint's failure, against the verdict the
// judge must give.
func TestScripted(t *testing.T) {
	const allowJSON = `{"verdict":"allow","reason":"The user asked to clean the build output.","code":""}`
	rmWithCwd := ask("rm -rf ./build", []string{"rm -rf ./build"}, project, intent)
	// Without a conversation the model's reason can only restate the
	// evidence, and is kept.
	rmNoConversation := ask("rm -rf ./build", []string{"rm -rf ./build"}, project, nil)
	for _, tc := range []struct {
		name string
		s    script
		ev   authorizer.Evidence
		// edit changes the endpoint's config.
		edit     func(*Config)
		want     authorizer.VerdictKind
		code     string
		reason   string // a substring of the reason
		noTokens bool
	}{
		{name: "allow", s: script{text: allowJSON}, ev: rmWithCwd, want: authorizer.Allow},
		{name: "allow with allows disabled", s: script{text: allowJSON}, ev: rmWithCwd,
			edit: func(c *Config) { c.AllowEnabled = false }, want: authorizer.Defer, code: CodeAllowsDisabled},
		{name: "deny with reason", ev: rmNoConversation, want: authorizer.Deny, code: "destructive", reason: "Do not delete the build directory",
			s: script{text: `{"verdict":"deny","reason":"Do not delete the build directory; run make clean instead.","code":"destructive"}`}},
		{name: "deny without code", ev: rmWithCwd, want: authorizer.Deny, code: CodeDenied, reason: "no",
			s: script{text: `{"verdict":"deny","reason":"no"}`}},
		{name: "defer", ev: rmNoConversation, want: authorizer.Defer, code: CodeUncertain, reason: "not sure",
			s: script{text: `{"verdict":"defer","reason":"not sure","code":""}`}},
		{name: "timeout", s: script{hang: true}, ev: rmWithCwd, want: authorizer.Defer, code: CodeTimeout, noTokens: true,
			edit: func(c *Config) { c.Timeout = Duration(300 * time.Millisecond) }},
		{name: "5xx", s: script{status: http.StatusServiceUnavailable}, ev: rmWithCwd, want: authorizer.Defer, code: CodeTransport, reason: "HTTP 503", noTokens: true},
		{name: "rate limited", s: script{status: http.StatusTooManyRequests}, ev: rmWithCwd, want: authorizer.Defer, code: CodeTransport, noTokens: true},
		{name: "bad key", s: script{status: http.StatusUnauthorized}, ev: rmWithCwd, want: authorizer.Defer, code: CodeAPIError, noTokens: true},
		{name: "malformed JSON", s: script{text: `{"verdict":"allow","reason":`}, ev: rmWithCwd, want: authorizer.Defer, code: CodeMalformed},
		{name: "prose around the JSON", s: script{text: "Here is my verdict:\n" + allowJSON}, ev: rmWithCwd, want: authorizer.Defer, code: CodeMalformed},
		{name: "verdict outside the schema", s: script{text: `{"verdict":"yes","reason":"fine"}`}, ev: rmWithCwd, want: authorizer.Defer, code: CodeMalformed},
		{name: "extra key", s: script{text: `{"verdict":"allow","reason":"fine","code":"","confidence":0.99}`}, ev: rmWithCwd, want: authorizer.Defer, code: CodeMalformed},
		{name: "oversized answer", s: script{text: `{"verdict":"allow","reason":"` + strings.Repeat("fine ", 2000) + `"}`}, ev: rmWithCwd, want: authorizer.Defer, code: CodeMalformed, reason: "bytes, more than"},
		{name: "oversized response", s: script{text: allowJSON, padding: MaxResponseBytes}, ev: rmWithCwd, want: authorizer.Defer, code: CodeMalformed, reason: "too large", noTokens: true},
		{name: "refusal", s: script{refuse: true}, ev: rmWithCwd, want: authorizer.Defer, code: CodeRefused},
		{name: "allow without cwd", s: script{text: allowJSON}, want: authorizer.Defer, code: CodeMissingCwd,
			ev: ask("rm -rf ./build", []string{"rm -rf ./build"}, "", intent)},
		{name: "allow without cwd, absolute path", s: script{text: allowJSON}, want: authorizer.Allow,
			ev: ask("rm -rf /tmp/shop-build", []string{"rm -rf /tmp/shop-build"}, "", intent)},
		{name: "allow without conversation", s: script{text: allowJSON}, want: authorizer.Defer, code: CodeMissingIntent,
			ev: ask("rm -rf ./build", []string{"rm -rf ./build"}, project, nil)},
		{name: "allow on assistant text only", s: script{text: allowJSON}, want: authorizer.Defer, code: CodeMissingIntent,
			ev: ask("rm -rf ./build", nil, project, direct(assistant("I will clean the build."), summary("The user wants a clean build.")))},
		{name: "reason quoting the conversation", want: authorizer.Deny, code: "exceeds_intent", reason: "The operator's AI judge refused",
			ev: ask("rm -rf ./build", nil, project, direct(user("my secret plan is to ship the release on friday night"))),
			s:  script{text: `{"verdict":"deny","reason":"You said my secret plan is to ship the release on friday night.","code":"exceeds_intent"}`}},
		{name: "reason naming the command", want: authorizer.Deny, code: "destructive", reason: "rm -rf ./build deletes",
			ev: ask("rm -rf ./build", nil, project, nil),
			s:  script{text: `{"verdict":"deny","reason":"rm -rf ./build deletes the build; use make clean.","code":"destructive"}`}},
		// With a conversation in the prompt, no word of the model's
		// reason leaves the judge: one word of the user's (a code word)
		// would reach the review log and the child.
		{name: "one word of the conversation in a deny", want: authorizer.Deny, code: "exceeds_intent", reason: "The operator's AI judge refused this command (exceeds_intent)",
			ev: ask("git reset --hard", nil, project, direct(user("The code word is zq-marker-4417."))),
			s:  script{text: `{"verdict":"deny","reason":"The code word zq-marker-4417 does not cover a hard reset.","code":"exceeds_intent"}`}},
		{name: "one word of the conversation in a defer", want: authorizer.Defer, code: "unclear_intent",
			ev: ask("git reset --hard", nil, project, direct(user("The code word is zq-marker-4417."))),
			s:  script{text: `{"verdict":"defer","reason":"zq-marker-4417?","code":"unclear_intent"}`}},
		{name: "a code outside the list", want: authorizer.Deny, code: CodeDenied,
			ev: ask("git reset --hard", nil, project, direct(user("The code word is zq-marker-4417."))),
			s:  script{text: `{"verdict":"deny","reason":"no","code":"zq_marker_4417"}`}},
	} {
		for _, provider := range providers {
			t.Run(provider+"/"+tc.name, func(t *testing.T) {
				e := newEndpoint(t, provider, tc.s)
				c := e.config()
				if tc.edit != nil {
					tc.edit(&c)
				}
				j := newTestJudge(t, c)
				v, err := j.Authorize(t.Context(), tc.ev)
				if err != nil {
					t.Fatalf("Authorize: %v", err)
				}
				if v.Kind != tc.want || (tc.code != "" && v.Code != tc.code) || (tc.code == "" && v.Code != "") {
					t.Fatalf("verdict %v %q (%s), want %v %q", v.Kind, v.Code, v.Reason, tc.want, tc.code)
				}
				if !strings.Contains(v.Reason, tc.reason) {
					t.Errorf("reason %q lacks %q", v.Reason, tc.reason)
				}
				if strings.Contains(v.Reason, "zq-marker") || strings.Contains(v.Code, "zq") {
					t.Errorf("a word of the conversation left the judge: reason %q, code %q", v.Reason, v.Code)
				}
				if v.Code != authorizer.CleanCode(v.Code) {
					t.Errorf("code %q is not a clean code", v.Code)
				}
				if got := e.got(); len(got) != 1 {
					t.Fatalf("%d calls to the model, want 1 (no retries)", len(got))
				}
				checkMeta(t, v.Meta, provider, tc.noTokens)
				checkRequest(t, e, tc.ev)
			})
		}
	}
}

// checkMeta checks the trail's metadata: the model that answered (or the
// configured one when none did), the prompt version, the tokens.
func checkMeta(t *testing.T, m authorizer.Meta, provider string, noTokens bool) {
	t.Helper()
	if m.PromptVersion != PromptVersion || m.LatencyMs < 0 {
		t.Errorf("meta %+v", m)
	}
	if noTokens {
		if m.Model != testModel && m.Model != "claude-scripted" && m.Model != "llama-scripted" {
			t.Errorf("meta model %q", m.Model)
		}
		return
	}
	want := map[string]string{ProviderAnthropic: "claude-scripted", ProviderOpenAI: "llama-scripted"}[provider]
	if m.Model != want || m.InputTokens != 1234 || m.OutputTokens != 56 {
		t.Errorf("meta %+v, want model %s and 1234/56 tokens", m, want)
	}
}

// checkRequest checks what the endpoint got: the key, the config's model
// and token bound, and prompts that are the rendered evidence packet and
// nothing else.
func checkRequest(t *testing.T, e *endpoint, ev authorizer.Evidence) {
	t.Helper()
	c := e.got()[0]
	switch e.provider {
	case ProviderAnthropic:
		// The SDK sends the key as x-api-key or as a bearer token,
		// depending on its version.
		if c.Header.Get("X-Api-Key") != testKey && c.Header.Get("Authorization") != "Bearer "+testKey {
			t.Errorf("no key: x-api-key %q, authorization %q", c.Header.Get("X-Api-Key"), c.Header.Get("Authorization"))
		}
		if c.Body["max_tokens"] != float64(DefaultMaxOutputTokens) {
			t.Errorf("max_tokens %v", c.Body["max_tokens"])
		}
	case ProviderOpenAI:
		if c.Header.Get("Authorization") != "Bearer "+testKey {
			t.Errorf("authorization %q", c.Header.Get("Authorization"))
		}
		rf, _ := c.Body["response_format"].(map[string]any)
		if rf["type"] != FormatJSONSchema || c.Body["max_tokens"] != float64(DefaultMaxOutputTokens) {
			t.Errorf("response_format %v, max_tokens %v", rf, c.Body["max_tokens"])
		}
	}
	if c.Body["model"] != testModel {
		t.Errorf("model %v", c.Body["model"])
	}
	system, user := c.prompts(t, e.provider)
	want, err := render(newPacket(ev))
	if err != nil {
		t.Fatal(err)
	}
	if system != want.System || user != want.User {
		t.Errorf("the prompts sent differ from the rendered packet:\n%s", user)
	}
	assertMinimal(t, system)
	assertMinimal(t, user)
}

// TestDefersBeforeAnyCall: what the judge cannot judge never reaches the
// model.
func TestDefersBeforeAnyCall(t *testing.T) {
	readAsk := ask("cat notes", nil, project, intent)
	readAsk.Surface, readAsk.Access.Surface, readAsk.Bash = "read", "path_read", nil
	noBash := ask("rm -rf ./build", nil, project, intent)
	noBash.Bash = nil
	blank := ask(" \n", nil, project, intent)
	long := ask("echo "+strings.Repeat("x", MaxInputBytes), nil, project, intent)
	displayOnly := ask("ls", nil, project, intent)
	displayOnly.Access = nil // pi 20.x: the display surface decides
	displayOnly.Surface = "edit"
	for _, provider := range providers {
		e := newEndpoint(t, provider, script{text: `{"verdict":"allow","reason":"r"}`})
		j := newTestJudge(t, e.config())
		for _, tc := range []struct {
			name string
			ev   authorizer.Evidence
			code string
		}{
			{"another surface", readAsk, CodeNotBash},
			{"display surface", displayOnly, CodeNotBash},
			{"no structured input", noBash, CodeMissingInput},
			{"blank input", blank, CodeMissingInput},
			{"input too long", long, CodeInputTooLong},
		} {
			v, err := j.Authorize(t.Context(), tc.ev)
			if err != nil || v.Kind != authorizer.Defer || v.Code != tc.code || v.Meta != (authorizer.Meta{}) {
				t.Errorf("%s/%s: %+v, %v; want a defer %q without meta", provider, tc.name, v, err, tc.code)
			}
		}
		if n := len(e.got()); n != 0 {
			t.Errorf("%s: %d model calls, want none", provider, n)
		}
	}
}

// TestAnswersBeforeTheBrokersDeadline: with a long configured timeout, the
// judge still defers before the deadline the broker put on the call, so
// that the broker gets a defer and not a failed link (deny by default).
func TestAnswersBeforeTheBrokersDeadline(t *testing.T) {
	for _, provider := range providers {
		e := newEndpoint(t, provider, script{hang: true})
		c := e.config()
		c.Timeout = Duration(time.Minute)
		j := newTestJudge(t, c)
		ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
		v, err := j.Authorize(ctx, ask("rm -rf ./build", nil, project, intent))
		late := ctx.Err()
		cancel()
		if err != nil || v.Kind != authorizer.Defer || v.Code != CodeTimeout {
			t.Fatalf("%s: %+v, %v; want a timeout defer", provider, v, err)
		}
		if late != nil {
			t.Errorf("%s: answered after the broker's deadline", provider)
		}
	}
}

func TestDescribe(t *testing.T) {
	e := newEndpoint(t, ProviderOpenAI, script{})
	c := e.config()
	c.AllowEnabled = false
	d, err := newTestJudge(t, c).Describe(t.Context())
	if err != nil || d.Name != "courier-authz-judge" || d.Version != PromptVersion || !strings.Contains(d.Summary, "never allows") {
		t.Fatalf("%+v, %v", d, err)
	}
}
