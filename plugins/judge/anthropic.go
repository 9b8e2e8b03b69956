package judge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicModel calls Anthropic's Messages API.
type anthropicModel struct {
	messages  anthropic.MessageService
	model     string
	maxTokens int64
}

// newAnthropic builds the Messages service from the config alone. It is
// built without the SDK's client, which would read ANTHROPIC_* variables
// the config does not name. Retries are off: the call has a deadline
// shorter than a retry's back-off, and a failed call defers.
func newAnthropic(c Config, key string) *anthropicModel {
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithHTTPClient(httpClient()),
		option.WithMaxRetries(0),
	}
	if c.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(c.BaseURL))
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	return &anthropicModel{messages: anthropic.NewMessageService(opts...), model: c.Model, maxTokens: c.MaxOutputTokens}
}

func (m *anthropicModel) complete(ctx context.Context, r rendered) (reply, error) {
	msg, err := m.messages.New(ctx, anthropic.MessageNewParams{
		Model:     anthropic.Model(m.model),
		MaxTokens: m.maxTokens,
		System:    []anthropic.TextBlockParam{{Text: r.System}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(r.User))},
	})
	if err != nil {
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) {
			return reply{}, &callError{code: classify(err, apiErr.StatusCode), err: fmt.Errorf("anthropic messages: HTTP %d", apiErr.StatusCode)}
		}
		return reply{}, &callError{code: classify(err, 0), err: fmt.Errorf("anthropic messages: %w", err)}
	}
	out := reply{
		Model:        string(msg.Model),
		InputTokens:  msg.Usage.InputTokens,
		OutputTokens: msg.Usage.OutputTokens,
		Refused:      msg.StopReason == anthropic.StopReasonRefusal,
	}
	var text strings.Builder
	for _, block := range msg.Content {
		if block.Type != "text" {
			// A tool call or anything else is not a verdict.
			return out, &callError{code: CodeMalformed, err: fmt.Errorf("anthropic messages: a %q block in the answer", cutBytes(block.Type, 40))}
		}
		text.WriteString(block.Text)
		if text.Len() > MaxAnswerBytes {
			break
		}
	}
	out.Text = text.String()
	return out, nil
}

// callError is a model call that failed, with the code of its defer.
type callError struct {
	code string
	err  error
}

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }
