package natsbox

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/seed6639df8c/courier/natsembed"
)

// engine is one embedded server and a local, unauthenticated client.
type engine struct {
	srv *natsembed.Server
	nc  *nats.Conn
	js  jetstream.JetStream
}

// testCtx bounds a test's engine calls.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startEngine starts a server on a random loopback port with a temporary
// store, connects with Local, and stops both at the test's end.
func startEngine(t *testing.T) *engine {
	t.Helper()
	ctx := testCtx(t)
	srv, err := natsembed.Start(ctx, natsembed.Options{Port: -1, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("natsembed.Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	nc, err := Connect(ctx, Options{URL: srv.ClientURL(), Local: true, Name: t.Name()})
	if err != nil {
		t.Fatalf("Connect %s: %v", srv.ClientURL(), err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	return &engine{srv: srv, nc: nc, js: js}
}

// ensured is startEngine with the layout in place.
func ensured(t *testing.T, cfg Config) *engine {
	t.Helper()
	e := startEngine(t)
	if err := Ensure(testCtx(t), e.js, cfg); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return e
}
