package natsbox

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/natsembed"
)

// The refusal comes before any dial, so these hosts need not exist.
func TestConnectRefusesUnauthenticated(t *testing.T) {
	tests := []struct {
		name     string
		opts     Options
		wantFlag string
	}{
		{"remote without local", Options{URL: "nats://nats.example.com:4222"}, "--nats-local"},
		{"loopback without local", Options{URL: "nats://127.0.0.1:4222"}, "--nats-local"},
		{"localhost without local", Options{URL: "localhost:4222"}, "--nats-local"},
		{"remote with local", Options{URL: "nats://10.0.0.5:4222", Local: true}, "--nats-local allows only loopback"},
		{"one remote among loopbacks", Options{URL: "nats://127.0.0.1:4222,nats://192.168.1.2:4222", Local: true}, "192.168.1.2"},
		{"name resolving elsewhere", Options{URL: "nats://localhost.example.com:4222", Local: true}, "localhost.example.com"},
		{"CA alone is no credential", Options{URL: "tls://nats.example.com:4222", CAFile: "/nonexistent/ca.pem"}, "--nats-local"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			nc, err := Connect(ctx, tc.opts)
			if nc != nil {
				nc.Close()
			}
			if !errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), tc.wantFlag) {
				t.Fatalf("Connect(%+v) = %v; want ErrUnauthenticated naming %q", tc.opts, err, tc.wantFlag)
			}
		})
	}
}

func TestConnectLocalLoopback(t *testing.T) {
	ctx := testCtx(t)
	hosts := []string{"127.0.0.1", "localhost", "::1"}
	for _, host := range hosts {
		t.Run(host, func(t *testing.T) {
			if host == "::1" && !haveIPv6Loopback() {
				t.Skip("no IPv6 loopback on this machine")
			}
			bind := host
			if host == "localhost" {
				bind = "127.0.0.1"
			}
			srv, err := natsembed.Start(ctx, natsembed.Options{Host: bind, Port: -1, StoreDir: t.TempDir()})
			if err != nil {
				t.Fatalf("natsembed.Start on %s: %v", bind, err)
			}
			defer srv.Shutdown(ctx)
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.ClientURL(), "nats://"))
			url := "nats://" + net.JoinHostPort(host, port)
			nc, err := Connect(ctx, Options{URL: url, Local: true})
			if err != nil {
				t.Fatalf("Connect(%s, Local) = %v", url, err)
			}
			nc.Close()
		})
	}
}

func haveIPv6Loopback() bool {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// Credentials lift the refusal: a user and password file reach a server
// that requires them, and a wrong password is refused by the server.
func TestConnectUserPasswordFile(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "auth.conf")
	if err := os.WriteFile(conf, []byte("authorization { user: u1, password: s3cret }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := natsembed.Start(ctx, natsembed.Options{Port: -1, StoreDir: filepath.Join(dir, "js"), ConfigFile: conf})
	if err != nil {
		t.Fatalf("natsembed.Start: %v", err)
	}
	defer srv.Shutdown(ctx)
	good := filepath.Join(dir, "pw")
	bad := filepath.Join(dir, "badpw")
	os.WriteFile(good, []byte("s3cret\n"), 0o600)
	os.WriteFile(bad, []byte("wrong\n"), 0o600)
	nc, err := Connect(ctx, Options{URL: srv.ClientURL(), User: "u1", PasswordFile: good})
	if err != nil {
		t.Fatalf("Connect with the right password: %v", err)
	}
	nc.Close()
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	nc, err = Connect(short, Options{URL: srv.ClientURL(), User: "u1", PasswordFile: bad})
	if err == nil {
		nc.Close()
		t.Fatal("Connect with a wrong password succeeded")
	}
	if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("wrong password: err = %v, want the server's authorization violation", err)
	}
	t.Logf("wrong password refused after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if _, err := Connect(ctx, Options{URL: srv.ClientURL(), User: "u1"}); err == nil || !strings.Contains(err.Error(), "password file") {
		t.Errorf("user without password file: err = %v, want one naming the password file", err)
	}
}

// An engine nobody listens on is "unavailable" within the caller's
// deadline, not after a reconnect loop of its own.
func TestConnectUnavailableWithinDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	nc, err := Connect(ctx, Options{URL: "nats://" + addr, Local: true})
	took := time.Since(start)
	if err == nil {
		nc.Close()
		t.Fatalf("Connect to a closed port succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("err = %v, want engine unavailable wrapping DeadlineExceeded", err)
	}
	if took > 2*time.Second {
		t.Errorf("Connect gave up after %s, want about the 700ms deadline", took)
	}
}

func TestRedact(t *testing.T) {
	got := redact("nats://u:p@h1:4222,tok@h2:4222,nats://h3")
	if strings.Contains(got, "p@") || strings.Contains(got, "tok") || !strings.Contains(got, "h3") {
		t.Errorf("redact = %q", got)
	}
}
