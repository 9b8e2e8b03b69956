//go:build nats

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/natsbox"
)

// Flag combinations that cannot work are refused before anything starts,
// saying why.
func TestNATSFlagsRefused(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--nats", "nats://127.0.0.1:4222", "--nats-listen", "127.0.0.1:4222"}, "give one"},
		{[]string{"--nats-store", root}, "configure the server --nats-listen runs"},
		{[]string{"--nats-listen", "0.0.0.0:4222"}, "need users, permissions and TLS"},
		{[]string{"--nats-listen", "4222"}, "expected host:port"},
		{[]string{"--nats-listen", "127.0.0.1:x"}, "expected a number"},
		{[]string{"--nats-listen", "127.0.0.1:0", "--nats-local"}, "the embedded server has its own users"},
		{[]string{"--nats-listen", "127.0.0.1:0", "--nats-user", "u", "--nats-password-file", "p"}, "the embedded server has its own users"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--nats-replicas", "0"}, "expected 1 or more"},
		{[]string{"--relay-transport", "nats://127.0.0.1:4222"}, "needs --terminal relay"},
		{[]string{"--terminal", "relay", "--parent", "p", "--relay-transport", "nats://127.0.0.1:4222"}, "needs --relay-owner"},
	} {
		var stderr bytes.Buffer
		args := append([]string{"--session", "s", "--root", root, "--log", "-"}, c.args...)
		if code := runServe(context.Background(), args, &stderr); code != exitUsage || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, %q; want %d saying %q", c.args, code, stderr.String(), exitUsage, c.want)
		}
	}
}

// broker serve --nats-listen runs the engine, says where it serves over
// NATS, and stops cleanly; a second broker of the session through that
// engine (another root, connecting as the broker user) refuses to start,
// naming the holder; one without credentials is refused as a usage error.
func TestServeOverNATSAndTheLease(t *testing.T) {
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{ready: make(chan struct{})}
	done := make(chan int, 1)
	go func() {
		done <- runServe(ctx, []string{"--session", "s", "--root", root, "--log", "-", "--terminal", "deny", "--nats-listen", "127.0.0.1:0"}, stderr)
	}()
	select {
	case <-stderr.ready:
	case code := <-done:
		t.Fatalf("exit %d: %s", code, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("not serving: %s", stderr.String())
	}
	line := regexp.MustCompile(`serving session "s" over NATS at (nats://127\.0\.0\.1:\d+) \(embedded, store ` + regexp.QuoteMeta(filepath.Join(root, "courier", "nats")) + `, users broker and local\)`)
	m := line.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no NATS serving line: %s", stderr.String())
	}

	var second bytes.Buffer
	args := []string{"--session", "s", "--root", t.TempDir(), "--log", "-", "--terminal", "deny", "--nats", m[1]}
	if code := runServe(ctx, args, &second); code != exitUsage || !strings.Contains(second.String(), "--nats-local") {
		t.Errorf("without credentials: exit %d, %s", code, second.String())
	}
	second.Reset()
	asBroker := append(args, "--nats-user", "broker", "--nats-password-file", filepath.Join(root, "courier", "nats", "broker.password"))
	if code := runServe(ctx, asBroker, &second); code != 1 || !strings.Contains(second.String(), natsbox.ErrLeaseHeld.Error()) || strings.Contains(second.String(), "serving session") {
		t.Errorf("a second broker: exit %d, %s; want 1, the lease held, not serving", code, second.String())
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(stderr.String(), "broker: stopped") {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("did not stop")
	}
}

func TestServeHelpExplainsNATS(t *testing.T) {
	var stderr bytes.Buffer
	if code := runServe(context.Background(), []string{"--help"}, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"Over NATS", "-nats-listen", "-nats-local", "-relay-transport", "-relay-owner", "-nats-replicas", "<store>/local.password", "--nats-user local", "broker.password never"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
