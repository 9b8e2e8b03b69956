package judge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// The providers a judge can call.
const (
	// ProviderAnthropic is Anthropic's Messages API.
	ProviderAnthropic = "anthropic"
	// ProviderOpenAI is the OpenAI chat completions API, which local
	// servers (llama.cpp, vLLM, Ollama) speak too.
	ProviderOpenAI = "openai"
)

// The response formats an OpenAI-compatible server may be asked for.
const (
	// FormatJSONSchema asks for the verdict's JSON schema (structured
	// output): llama.cpp, vLLM and Ollama constrain decoding to it.
	FormatJSONSchema = "json_schema"
	// FormatJSONObject asks only for a JSON object, for a server that does
	// not take a schema.
	FormatJSONObject = "json_object"
	// FormatNone asks for nothing beyond the prompt.
	FormatNone = "none"
)

// Defaults of a config.
const (
	// DefaultTimeout bounds one model call. The judge also answers before
	// the broker's deadline for the link (its timeoutMs), whichever is
	// sooner, so a slow model defers rather than fail the link.
	DefaultTimeout = 20 * time.Second
	// DefaultMaxOutputTokens is room for the verdict and a short reason.
	DefaultMaxOutputTokens = 400
	// maxOutputTokensLimit: a verdict needs no more; more only costs.
	maxOutputTokensLimit = 8192
	// maxConfigBytes bounds the config file read.
	maxConfigBytes = 64 << 10
)

// Config is the judge's settings, read from the JSON file its link names
// (--config) by [ParseConfig]:
//
//	{"provider": "anthropic", "model": "claude-sonnet-4-5",
//	 "api_key_file": "/etc/courier/judge.key",
//	 "timeout": "8s", "max_output_tokens": 400, "allow_enabled": false}
//
// The broker starts a plugin with PATH and TMPDIR only, so a key in the
// broker's environment does not reach it: name a file (api_key_file) the
// plugin can read (its Landlock view includes /etc/courier), or run the
// plugin where api_key_env's variable is set.
type Config struct {
	// Provider is "anthropic" or "openai".
	Provider string `json:"provider"`
	// BaseURL is the API's base URL; empty means the provider's hosted API.
	// A local OpenAI-compatible server is e.g. http://127.0.0.1:8080/v1.
	BaseURL string `json:"base_url"`
	// Model is the model's name as the API knows it.
	Model string `json:"model"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `json:"api_key_env"`
	// APIKeyFile names a file holding the API key (surrounding space
	// trimmed).
	APIKeyFile string `json:"api_key_file"`
	// Timeout bounds one model call, a Go duration ("8s"); default
	// DefaultTimeout.
	Timeout Duration `json:"timeout"`
	// MaxOutputTokens bounds the model's answer; default
	// DefaultMaxOutputTokens.
	MaxOutputTokens int64 `json:"max_output_tokens"`
	// AllowEnabled lets the judge allow. Off by default: the judge then
	// denies or defers, never allows, and its log says which asks it
	// would have allowed (code allows_disabled).
	AllowEnabled bool `json:"allow_enabled"`
	// ResponseFormat is what an OpenAI-compatible server is asked for:
	// FormatJSONSchema (default), FormatJSONObject or FormatNone. The
	// answer is parsed as strictly whatever the server was asked.
	ResponseFormat string `json:"response_format"`
}

// Duration is a time.Duration written as a Go duration string in JSON.
type Duration time.Duration

// MarshalJSON writes d as UnmarshalJSON reads it.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads "8s", "1500ms"...
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"8s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ErrConfig is wrapped by every error ParseConfig returns.
var ErrConfig = errors.New("judge config")

// ParseConfig reads a config: one JSON object with only the keys of
// [Config], each at most once; the defaults are filled in and every
// value checked.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if len(data) > maxConfigBytes {
		return c, fmt.Errorf("%w: %d bytes, more than %d", ErrConfig, len(data), maxConfigBytes)
	}
	// Check refuses repeated keys, which encoding/json would let the last
	// of win, and keys that differ only in case.
	if err := strictjson.Check(data); err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if dec.More() {
		return c, fmt.Errorf("%w: text after the object", ErrConfig)
	}
	return c, c.fill()
}

// LoadConfig reads and parses the config file at path.
func LoadConfig(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return Config{}, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// fill sets the defaults and checks every value.
func (c *Config) fill() error {
	switch c.Provider {
	case ProviderAnthropic, ProviderOpenAI:
	case "":
		return fmt.Errorf("%w: provider: missing, want %q or %q", ErrConfig, ProviderAnthropic, ProviderOpenAI)
	default:
		return fmt.Errorf("%w: provider: %q, want %q or %q", ErrConfig, c.Provider, ProviderAnthropic, ProviderOpenAI)
	}
	if strings.TrimSpace(c.Model) == "" {
		return fmt.Errorf("%w: model: missing", ErrConfig)
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%w: base_url: %q, want an http or https URL", ErrConfig, c.BaseURL)
		}
	}
	switch {
	case c.Timeout == 0:
		c.Timeout = Duration(DefaultTimeout)
	case c.Timeout < 0:
		return fmt.Errorf("%w: timeout: %v, want a positive duration", ErrConfig, time.Duration(c.Timeout))
	}
	switch {
	case c.MaxOutputTokens == 0:
		c.MaxOutputTokens = DefaultMaxOutputTokens
	case c.MaxOutputTokens < 0 || c.MaxOutputTokens > maxOutputTokensLimit:
		return fmt.Errorf("%w: max_output_tokens: %d, want 1 to %d", ErrConfig, c.MaxOutputTokens, maxOutputTokensLimit)
	}
	switch c.ResponseFormat {
	case "":
		c.ResponseFormat = FormatJSONSchema
	case FormatJSONSchema, FormatJSONObject, FormatNone:
	default:
		return fmt.Errorf("%w: response_format: %q, want %q, %q or %q", ErrConfig, c.ResponseFormat, FormatJSONSchema, FormatJSONObject, FormatNone)
	}
	if c.ResponseFormat != FormatJSONSchema && c.Provider != ProviderOpenAI {
		return fmt.Errorf("%w: response_format: only for provider %q", ErrConfig, ProviderOpenAI)
	}
	if c.APIKeyEnv != "" && c.APIKeyFile != "" {
		return fmt.Errorf("%w: api_key_env and api_key_file: give one", ErrConfig)
	}
	return nil
}

// APIKey resolves the API key: from api_key_file, else from api_key_env's
// variable (looked up with getenv). A hosted API (no base_url) needs one;
// a local server may not. A key source that is named but yields nothing is
// an error, not an anonymous call.
func (c Config) APIKey(getenv func(string) string) (string, error) {
	var key string
	switch {
	case c.APIKeyFile != "":
		data, err := os.ReadFile(c.APIKeyFile)
		if err != nil {
			return "", fmt.Errorf("%w: api_key_file: %w", ErrConfig, err)
		}
		key = strings.TrimSpace(string(data))
		if key == "" {
			return "", fmt.Errorf("%w: api_key_file %s: empty", ErrConfig, c.APIKeyFile)
		}
	case c.APIKeyEnv != "":
		key = strings.TrimSpace(getenv(c.APIKeyEnv))
		if key == "" {
			return "", fmt.Errorf("%w: api_key_env: $%s is empty or unset (a broker passes plugins no environment: use api_key_file)", ErrConfig, c.APIKeyEnv)
		}
	case c.BaseURL == "":
		return "", fmt.Errorf("%w: the hosted %s API needs a key: set api_key_file or api_key_env", ErrConfig, c.Provider)
	}
	if strings.ContainsAny(key, "\r\n") {
		return "", fmt.Errorf("%w: API key: holds a line break", ErrConfig)
	}
	return key, nil
}
