package judge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// model is one provider's API: one call, one answer. The two
// implementations are anthropicModel and openaiModel, each on the
// provider's official SDK.
type model interface {
	complete(ctx context.Context, r rendered) (reply, error)
}

// reply is what a model call returned.
type reply struct {
	// Text is the answer's text.
	Text string
	// Model is the model that answered, as the API named it.
	Model string
	// Refused: the model or the provider's filter refused to answer.
	Refused bool
	// InputTokens and OutputTokens are the call's usage.
	InputTokens, OutputTokens int64
}

// The codes of the judge's own defers: why it did not (or could not) let
// the model's verdict stand. Each is a [authorizer.Verdict] Code.
const (
	CodeNotBash        = "not_bash"
	CodeMissingInput   = "missing_input"
	CodeInputTooLong   = "input_too_long"
	CodeTimeout        = "timeout"
	CodeTransport      = "transport"
	CodeAPIError       = "api_error"
	CodeRefused        = "refused"
	CodeMalformed      = "malformed"
	CodeMissingCwd     = "missing_cwd"
	CodeMissingIntent  = "missing_intent"
	CodeAllowsDisabled = "allows_disabled"
	CodeUncertain      = "uncertain"
	CodeDenied         = "denied"
)

// MaxResponseBytes bounds an API response body. An answer is at most
// MaxAnswerBytes of text; the rest is the API's envelope.
const MaxResponseBytes = 256 << 10

// errResponseTooLarge is returned by a response body past
// MaxResponseBytes.
var errResponseTooLarge = errors.New("model API response too large")

// classify names why a model call failed: the judge's deadline or the
// request's ("timeout"), a response too large to be a verdict
// ("malformed"), an API that refused the request itself: a bad key, an
// unknown model, a bad request ("api_error"), and everything else, the
// network, a 5xx, a rate limit ("transport"). status is the HTTP status
// of an API error, 0 when there was none.
func classify(err error, status int) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.As(err, &ne) && ne.Timeout(), status == http.StatusRequestTimeout, status == http.StatusGatewayTimeout:
		return CodeTimeout
	case errors.Is(err, errResponseTooLarge):
		return CodeMalformed
	case status >= 400 && status < 500 && status != http.StatusTooManyRequests:
		return CodeAPIError
	}
	return CodeTransport
}

// httpClient is the client both SDKs use: it never follows a redirect
// (an API does not redirect a POST; a redirect would carry the key
// elsewhere) and it refuses a response body past MaxResponseBytes.
func httpClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = 0 // the call's context bounds it
	return &http.Client{
		Transport: capped{t},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// capped is a RoundTripper whose response bodies end in an error past
// MaxResponseBytes.
type capped struct{ rt http.RoundTripper }

func (c capped) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	resp.Body = &cappedBody{rc: resp.Body, left: MaxResponseBytes}
	return resp, nil
}

type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, fmt.Errorf("%w: more than %d bytes", errResponseTooLarge, MaxResponseBytes)
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// callDeadline is how long the judge gives one model call: the config's
// timeout, or less so that the judge answers before the broker's deadline
// for the link (ctx's), with a margin for the answer's way back.
func callDeadline(ctx context.Context, timeout time.Duration) time.Duration {
	const margin = 250 * time.Millisecond
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl) - margin; left < timeout {
			return max(left, 0)
		}
	}
	return timeout
}
