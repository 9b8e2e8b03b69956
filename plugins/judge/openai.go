package judge

import (
	"context"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openaiModel calls the chat completions API of OpenAI or of a server that
// speaks it (llama.cpp's llama-server, vLLM, Ollama).
type openaiModel struct {
	chat      openai.ChatCompletionService
	model     string
	maxTokens int64
	format    string
}

// verdictSchema is the answer's JSON schema, for a server that constrains
// its output to one (response_format json_schema). Strict mode wants every
// property required and no others.
var verdictSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"verdict": map[string]any{"type": "string", "enum": []string{"allow", "deny", "defer"}},
		"reason":  map[string]any{"type": "string"},
		"code":    map[string]any{"type": "string"},
	},
	"required":             []string{"verdict", "reason", "code"},
	"additionalProperties": false,
}

// newOpenAI builds the chat completions service from the config alone:
// the service is built without the SDK's client, which would read
// OPENAI_* variables (a base URL, an organization, extra headers) the
// config does not name. Retries are off, as for Anthropic.
func newOpenAI(c Config, key string) *openaiModel {
	base := c.BaseURL
	if base == "" {
		base = "https://api.openai.com/v1/"
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(httpClient()),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	return &openaiModel{chat: openai.NewChatCompletionService(opts...), model: c.Model, maxTokens: c.MaxOutputTokens, format: c.ResponseFormat}
}

func (m *openaiModel) complete(ctx context.Context, r rendered) (reply, error) {
	params := openai.ChatCompletionNewParams{
		Model: shared.ChatModel(m.model),
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage(r.System),
			openai.UserMessage(r.User),
		},
		// max_tokens rather than max_completion_tokens: the local servers
		// this path is for all read it.
		// No temperature: OpenAI's reasoning models refuse any but the
		// default, and the schema, not sampling, keeps the format.
		MaxTokens: openai.Int(m.maxTokens),
	}
	switch m.format {
	case FormatJSONSchema:
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   "courier_verdict",
					Strict: openai.Bool(true),
					Schema: verdictSchema,
				},
			},
		}
	case FormatJSONObject:
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONObject: &shared.ResponseFormatJSONObjectParam{},
		}
	}
	resp, err := m.chat.New(ctx, params)
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return reply{}, &callError{code: classify(err, apiErr.StatusCode), err: fmt.Errorf("chat completions: HTTP %d", apiErr.StatusCode)}
		}
		return reply{}, &callError{code: classify(err, 0), err: fmt.Errorf("chat completions: %w", err)}
	}
	out := reply{
		Model:        resp.Model,
		InputTokens:  resp.Usage.PromptTokens,
		OutputTokens: resp.Usage.CompletionTokens,
	}
	if len(resp.Choices) != 1 {
		return out, &callError{code: CodeMalformed, err: fmt.Errorf("chat completions: %d choices, want 1", len(resp.Choices))}
	}
	choice := resp.Choices[0]
	if choice.FinishReason == "content_filter" || choice.Message.Refusal != "" {
		out.Refused = true
		return out, nil
	}
	if len(choice.Message.ToolCalls) > 0 {
		return out, &callError{code: CodeMalformed, err: errors.New("chat completions: a tool call in the answer")}
	}
	out.Text = choice.Message.Content
	return out, nil
}
