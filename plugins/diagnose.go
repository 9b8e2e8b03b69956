package plugins

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seed6639df8c/courier/chain"
)

// contractHint closes every message about a plugin that broke the
// handshake: where the contract is written, and the one line a Go author
// needs.
const contractHint = "the plugin contract is docs/PLUGINS.md (handshake, certificate, services); a Go plugin gets it right by calling sdk.Serve and printing nothing on stdout before it"

// startError is why a plugin process did not start, in words that do not
// assume the plugin is written in Go. It wraps chain.ErrUnavailable: the
// link is retried on a later ask.
type startError struct {
	// cause is what the plugin did, or what went wrong, in one sentence.
	cause string
	// detail is go-plugin's or gRPC's own words, sanitized and capped.
	detail string
	// stderr is the last lines the plugin printed on stderr.
	stderr string
	// hint adds contractHint: the plugin broke the contract.
	hint bool
}

func (e *startError) Error() string {
	var b strings.Builder
	b.WriteString(e.cause)
	if e.detail != "" {
		b.WriteString("\n  detail: " + e.detail)
	}
	if e.stderr != "" {
		b.WriteString("\n  the plugin's stderr: " + e.stderr)
	}
	if e.hint {
		b.WriteString("\n  " + contractHint)
	}
	return b.String()
}

func (e *startError) Unwrap() error { return chain.ErrUnavailable }

// maxRecordedLine caps what is kept of a plugin's first stdout line: a
// handshake line with an RSA-4096 certificate is about 2 KiB.
const maxRecordedLine = 16 << 10

// firstLine passes a plugin's stdout through to go-plugin and keeps its
// first line, so that a handshake go-plugin refused can be explained from
// what the plugin printed.
type firstLine struct {
	r io.ReadCloser

	mu   sync.Mutex
	buf  []byte
	done bool // the line ended (newline or end of stream)
	cut  bool // it was longer than maxRecordedLine
}

func (f *firstLine) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	f.mu.Lock()
	if !f.done {
		chunk := p[:n]
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			chunk, f.done = chunk[:i], true
		}
		room := maxRecordedLine - len(f.buf)
		if len(chunk) > room {
			chunk, f.cut = chunk[:room], true
		}
		f.buf = append(f.buf, chunk...)
		if err != nil {
			f.done = true
		}
	}
	f.mu.Unlock()
	return n, err
}

func (f *firstLine) Close() error { return f.r.Close() }

// line returns what the plugin printed before its first newline, and
// whether it printed anything at all.
func (f *firstLine) line() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(f.buf), len(f.buf) > 0
}

// explainStart is the startError of a start that go-plugin refused before
// it had a connection (err is its error).
func explainStart(err error, out *firstLine, proc *procRunner, timeout time.Duration, tail string) *startError {
	e := &startError{detail: capRunes(sanitize(err.Error()), 500), stderr: tail, hint: true}
	line, printed := "", false
	if out != nil {
		line, printed = out.line()
	}
	msg := err.Error()
	switch {
	case printed:
		if cause := checkHandshakeLine(line); cause != "" {
			e.cause = cause
		} else {
			e.cause = "the broker refused the plugin's handshake line " + quoteLine(line)
		}
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		e.cause = fmt.Sprintf("the plugin printed no handshake line on stdout within %v", timeout)
	default:
		// The process closed its stdout or exited: wait a moment for its
		// status, which says more than "exited".
		e.cause = "the plugin exited before printing its handshake line"
		if proc != nil {
			if status, ok := proc.exitStatus(time.Second); ok {
				e.cause = fmt.Sprintf("the plugin exited (%s) before printing its handshake line", status)
			} else {
				e.cause = "the plugin closed its stdout without printing its handshake line"
			}
		}
	}
	return e
}

// explainConnect is the startError of a plugin whose handshake line
// go-plugin accepted but whose first call (Describe) failed: the TLS
// connection or the service is wrong.
func explainConnect(err error, out *firstLine, timeout time.Duration, tail string) *startError {
	e := &startError{detail: capRunes(sanitize(err.Error()), 500), stderr: tail, hint: true}
	var line string
	if out != nil {
		line, _ = out.line()
	}
	if cause := checkHandshakeLine(line); cause != "" {
		e.cause = cause
		return e
	}
	msg := err.Error()
	fields := strings.Split(strings.TrimSpace(line), "|")
	addr := ""
	if len(fields) > 3 {
		addr = fields[3]
	}
	switch {
	case strings.Contains(msg, "missing selected ALPN"):
		e.cause = `the plugin's TLS server does not negotiate ALPN "h2", which gRPC over TLS requires`
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		e.cause = "the plugin's server does not speak TLS: it must serve gRPC over TLS with the certificate on its handshake line"
	case strings.Contains(msg, "certificate signed by unknown authority"):
		e.cause = "the plugin's TLS server presented another certificate than the one on its handshake line"
	case strings.Contains(msg, "connection refused"), strings.Contains(msg, "no such file or directory"):
		e.cause = fmt.Sprintf("nothing accepts connections at the handshake line's address %q", capRunes(sanitize(addr), 200))
	case status.Code(err) == codes.Unimplemented:
		e.cause = "the plugin does not serve courier.authorizer.v1.AuthorizerService (its Describe is unimplemented)"
	case errors.Is(err, errDescribeTimeout), status.Code(err) == codes.DeadlineExceeded:
		e.cause = fmt.Sprintf("the plugin did not answer Describe within %v", timeout)
	case strings.Contains(msg, "authentication handshake failed"):
		e.cause = "the TLS handshake with the plugin failed"
	default:
		// The plugin's own error from Describe is its business, not a
		// broken contract.
		e.cause, e.hint = "the plugin's Describe failed", false
	}
	return e
}

// errDescribeTimeout marks a Describe that ran out of its start timeout.
var errDescribeTimeout = errors.New("describe timed out")

// checkHandshakeLine names the first rule of the handshake line that line
// breaks, in the order go-plugin and then the TLS connection check them;
// "" when it keeps them all.
func checkHandshakeLine(line string) string {
	line = strings.TrimSpace(line)
	fields := strings.Split(line, "|")
	if len(fields) < 4 {
		return "the plugin printed " + quoteLine(line) + " on stdout instead of the handshake line (CORE|APP|NETWORK|ADDRESS|grpc|CERTIFICATE); the first line on stdout must be the handshake line, so print nothing before it"
	}
	switch {
	case fields[0] != "1":
		return fmt.Sprintf("the handshake line's first field (go-plugin's core protocol version) is %q, want 1", capRunes(fields[0], 40))
	case fields[1] != "1":
		return fmt.Sprintf("the handshake line's second field (courier's plugin protocol version) is %q, want 1, the version PLUGIN_PROTOCOL_VERSIONS offers", capRunes(fields[1], 40))
	case fields[2] != "unix" && fields[2] != "tcp":
		return fmt.Sprintf("the handshake line's third field (network) is %q, want unix", capRunes(fields[2], 40))
	case len(fields) < 5:
		return `the handshake line has no fifth field (protocol): it must be "grpc", then the certificate`
	case fields[4] != "grpc":
		return fmt.Sprintf("the handshake line's fifth field (protocol) is %q, want grpc", capRunes(fields[4], 40))
	case len(fields) < 6 || len(fields[5]) <= 50:
		return "the handshake line has no certificate in its sixth field: the broker requires automatic mutual TLS, the server certificate's DER in base64 without padding"
	}
	cert := fields[5]
	der, err := base64.RawStdEncoding.DecodeString(cert)
	if err != nil {
		if strings.HasSuffix(cert, "=") {
			return "the handshake line's certificate ends in '=' padding: it must be base64 without padding (standard alphabet, trailing '=' removed)"
		}
		return fmt.Sprintf("the handshake line's certificate is not valid base64 without padding (standard alphabet A-Z a-z 0-9 + /): %v", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Sprintf("the handshake line's certificate is not a DER X.509 certificate: %v", err)
	}
	if err := c.VerifyHostname("localhost"); err != nil {
		return fmt.Sprintf(`the handshake line's certificate is not valid for "localhost" (its DNS names: %q): the broker connects as to localhost`, c.DNSNames)
	}
	if now := time.Now(); now.Before(c.NotBefore) || now.After(c.NotAfter) {
		return fmt.Sprintf("the handshake line's certificate is not valid now (valid from %s to %s)", c.NotBefore.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))
	}
	if len(c.ExtKeyUsage) > 0 && !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageServerAuth) && !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageAny) {
		return "the handshake line's certificate does not allow server authentication (its extended key usage lacks serverAuth)"
	}
	return ""
}

// quoteLine quotes a line a plugin printed, cut for a message.
func quoteLine(line string) string {
	return fmt.Sprintf("%q", capRunes(strings.ToValidUTF8(line, "\uFFFD"), 120))
}
