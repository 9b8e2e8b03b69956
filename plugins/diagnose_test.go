package plugins

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/chain"
	"github.com/seed6639df8c/courier/rules"
)

// rawSpec is a link on rawplugin in mode.
func rawSpec(mode string) rules.AuthorizerLink {
	return rules.AuthorizerLink{
		Name: "raw", Path: rawBin, SHA256: fileSum(rawBin), Args: []string{"--mode", mode},
		Timeout: 5 * time.Second, OnFailure: rules.LinkFailDeny, Mode: rules.LinkEnforce,
	}
}

// A plugin written from docs/PLUGINS.md without go-plugin or the SDK (no
// GRPCStdio, GRPCController or GRPCBroker) starts and answers.
func TestRawPluginFollowsTheContract(t *testing.T) {
	h := load(t, Options{}, rawSpec("ok"))
	if len(h.errs) > 0 {
		t.Fatal(h.errs)
	}
	for value, want := range map[string]authorizer.VerdictKind{"allow": authorizer.Allow, "deny": authorizer.Deny, "other": authorizer.Defer} {
		v, err := h.link().Authorize(t.Context(), authorizer.Evidence{Surface: "bash", Value: value})
		if err != nil || v.Kind != want {
			t.Errorf("%s: %v %v, want %v", value, v, err, want)
		}
	}
	if !strings.Contains(h.diag.String(), `"plugin":"rawplugin"`) {
		t.Errorf("the start is not logged with the plugin's name:\n%s", h.diag)
	}
}

// Each way of breaking the handshake is named in words that do not assume
// Go, with the contract's hint as one line among them.
func TestStartFailuresNameTheCause(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want string
		hint bool
	}{
		{"exit", "the plugin exited (exit status 3) before printing its handshake line", true},
		{"silent", "the plugin printed no handshake line on stdout within 1.5s", true},
		{"garbage", `the plugin printed "rawplugin starting up" on stdout instead of the handshake line`, true},
		{"core", "the handshake line's first field (go-plugin's core protocol version) is \"2\", want 1", true},
		{"version", "the handshake line's second field (courier's plugin protocol version) is \"9\", want 1", true},
		{"network", "the handshake line's third field (network) is \"pipe\", want unix", true},
		{"netrpc", "the handshake line has no fifth field (protocol)", true},
		{"padded", "the handshake line's certificate ends in '=' padding: it must be base64 without padding", true},
		{"nocert", "the handshake line has no certificate in its sixth field", true},
		{"notcert", "the handshake line's certificate is not a DER X.509 certificate", true},
		{"plaintext", "the plugin's server does not speak TLS", true},
		{"wronghost", `the handshake line's certificate is not valid for "localhost"`, true},
		{"noalpn", `the plugin's TLS server does not negotiate ALPN "h2"`, true},
		{"badaddr", "nothing accepts connections at the handshake line's address", true},
		{"nodescribe", "the plugin does not serve courier.authorizer.v1.AuthorizerService", true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			h := load(t, Options{StartTimeout: 1500 * time.Millisecond}, rawSpec(tc.mode))
			var le *LinkError
			if len(h.errs) != 1 || !errors.As(h.errs[0], &le) || le.Disabled || !errors.Is(le, chain.ErrUnavailable) {
				t.Fatalf("load errors %v, want one start failure", h.errs)
			}
			msg := le.Error()
			t.Log(msg)
			first, _, _ := strings.Cut(msg, "\n")
			if !strings.Contains(first, tc.want) {
				t.Errorf("first line %q\ndoes not say %q\n(whole message:\n%s)", first, tc.want, msg)
			}
			if got := strings.Contains(msg, "\n  "+contractHint); got != tc.hint {
				t.Errorf("hint line present: %v, want %v:\n%s", got, tc.hint, msg)
			}
			if strings.Contains(first, "sdk.Serve") {
				t.Errorf("the Go hint is in the cause, not a line of its own: %q", first)
			}
			if d, ok := h.ask("allow"); ok && d.Approved() {
				t.Fatalf("a plugin that did not start allowed: %+v", d)
			}
		})
	}
}

// The exit case also carries what the plugin said on stderr.
func TestStartFailureCarriesStderr(t *testing.T) {
	h := load(t, Options{}, rawSpec("exit"))
	if len(h.errs) != 1 || !strings.Contains(h.errs[0].Error(), "\n  the plugin's stderr: rawplugin: cannot read my settings") {
		t.Fatalf("errors %v, want the plugin's stderr on a line of its own", h.errs)
	}
}

func testCertField(t testing.TB, host string, eku []x509.ExtKeyUsage, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: notAfter, ExtKeyUsage: eku,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawStdEncoding.EncodeToString(der)
}

func TestCheckHandshakeLine(t *testing.T) {
	good := testCertField(t, "localhost", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, time.Now().Add(time.Hour))
	expired := testCertField(t, "localhost", nil, time.Now().Add(-time.Hour))
	clientOnly := testCertField(t, "localhost", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, time.Now().Add(time.Hour))
	for _, tc := range []struct{ line, want string }{
		{"1|1|unix|/tmp/p/plugin1|grpc|" + good, ""},
		{"1|1|unix|/tmp/p/plugin1|grpc|" + good + "  \r", ""},
		{"1|1|tcp|127.0.0.1:1234|grpc|" + good, ""},
		{"", "instead of the handshake line"},
		{"hello", `the plugin printed "hello" on stdout instead`},
		{"1|1|unix|/s|grpc|" + good + "==", "ends in '=' padding"},
		{"1|1|unix|/s|grpc|" + good[:60] + "-_" + good[62:], "not valid base64 without padding"},
		{"1|1|unix|/s|grpc|short", "no certificate in its sixth field"},
		{"1|1|unix|/s|grpc|" + expired, "not valid now"},
		{"1|1|unix|/s|grpc|" + clientOnly, "does not allow server authentication"},
		{"1|1|unix|/s|netrpc|" + good, `fifth field (protocol) is "netrpc"`},
		{"x|1|unix|/s|grpc|" + good, "first field"},
		{"1|2|unix|/s|grpc|" + good, "second field"},
	} {
		got := checkHandshakeLine(tc.line)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("checkHandshakeLine(%.40q…) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// FuzzCheckHandshakeLine: the line is the plugin's; nothing in it may
// panic the broker, and a message quotes at most a bounded part of it.
func FuzzCheckHandshakeLine(f *testing.F) {
	f.Add("1|1|unix|/tmp/p|grpc|" + testCertField(f, "localhost", nil, time.Now().Add(time.Hour)))
	f.Add("1|1|unix|/s|grpc|" + strings.Repeat("A", 80) + "=")
	f.Add("\x00|\xff|")
	f.Fuzz(func(t *testing.T, line string) {
		if msg := checkHandshakeLine(line); len(msg) > 2000 {
			t.Errorf("message of %d bytes", len(msg))
		}
	})
}

// CheckLink (broker check --plugins) starts a link, probes it and stops
// it; each failure says what failed.
func TestCheckLink(t *testing.T) {
	stale := rawSpec("ok")
	stale.SHA256 = strings.Repeat("0", 64)
	for _, tc := range []struct {
		name   string
		link   rules.AuthorizerLink
		want   string // "" for success
		health bool
	}{
		{"ok", rawSpec("ok"), "", true},
		{"go sdk", spec("t"), "", true},
		{"no health service", rawSpec("nohealth"), "does not serve grpc.health.v1.Health", false},
		{"stale pin", stale, "checksum mismatch", false},
		{"broken handshake", rawSpec("padded"), "'=' padding", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := CheckLink(t.Context(), tc.link, Options{Confinement: testPlan, StartTimeout: 5 * time.Second})
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			case tc.want == "" && (res.Plugin == "" || res.AuthorizerHealth != tc.health):
				t.Errorf("result %+v", res)
			}
		})
	}
}
