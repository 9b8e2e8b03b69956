package judge

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"provider":"openai","base_url":"http://127.0.0.1:8080/v1","model":"qwen"}`))
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.Timeout) != DefaultTimeout || c.MaxOutputTokens != DefaultMaxOutputTokens || c.AllowEnabled || c.ResponseFormat != FormatJSONSchema {
		t.Errorf("defaults: %+v", c)
	}
	c, err = ParseConfig([]byte(`{"provider":"anthropic","model":"m","api_key_env":"K","timeout":"1500ms","max_output_tokens":200,"allow_enabled":true}`))
	if err != nil || time.Duration(c.Timeout) != 1500*time.Millisecond || c.MaxOutputTokens != 200 || !c.AllowEnabled {
		t.Errorf("%+v, %v", c, err)
	}
	for _, bad := range []string{
		``,
		`[]`,
		`{"provider":"anthropic"}`,
		`{"model":"m"}`,
		`{"provider":"gemini","model":"m"}`,
		`{"provider":"openai","model":"m","temperature":0}`,
		`{"provider":"openai","model":"m","Model":"n"}`,
		`{"provider":"openai","model":"m","model":"n"}`,
		`{"provider":"openai","model":"m","timeout":5}`,
		`{"provider":"openai","model":"m","timeout":"-1s"}`,
		`{"provider":"openai","model":"m","max_output_tokens":-1}`,
		`{"provider":"openai","model":"m","max_output_tokens":100000}`,
		`{"provider":"openai","model":"m","base_url":"file:///etc/passwd"}`,
		`{"provider":"openai","model":"m","response_format":"xml"}`,
		`{"provider":"anthropic","model":"m","response_format":"json_object"}`,
		`{"provider":"openai","model":"m","api_key_env":"A","api_key_file":"/f"}`,
		`{"provider":"openai","model":"m"} {}`,
	} {
		if _, err := ParseConfig([]byte(bad)); err == nil || !errors.Is(err, ErrConfig) {
			t.Errorf("ParseConfig(%s) = %v, want an ErrConfig", bad, err)
		}
	}
}

func TestAPIKey(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte("sk-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string { return map[string]string{"K": "sk-env", "NL": "a\nb"}[k] }
	for _, tc := range []struct {
		c    Config
		want string
		bad  string
	}{
		{c: Config{Provider: "anthropic", APIKeyFile: file}, want: "sk-file"},
		{c: Config{Provider: "anthropic", APIKeyEnv: "K"}, want: "sk-env"},
		{c: Config{Provider: "openai", BaseURL: "http://127.0.0.1:8080/v1"}, want: ""},
		{c: Config{Provider: "openai"}, bad: "needs a key"},
		{c: Config{Provider: "openai", APIKeyEnv: "UNSET"}, bad: "empty or unset"},
		{c: Config{Provider: "openai", APIKeyFile: empty}, bad: "empty"},
		{c: Config{Provider: "openai", APIKeyFile: filepath.Join(dir, "missing")}, bad: "no such file"},
		{c: Config{Provider: "openai", APIKeyEnv: "NL"}, bad: "line break"},
	} {
		got, err := tc.c.APIKey(env)
		switch {
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%+v: %q, %v; want an error with %q", tc.c, got, err, tc.bad)
		case tc.bad == "" && (err != nil || got != tc.want):
			t.Errorf("%+v: %q, %v; want %q", tc.c, got, err, tc.want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "judge.json")
	if err := os.WriteFile(path, []byte(`{"provider":"openai","base_url":"http://127.0.0.1:1/v1","model":"m"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"provider":"openai","model":"`+strings.Repeat("m", maxConfigBytes)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("an oversized config: %v", err)
	}
}
