package natsembed

import (
	"context"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestStartJetStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv, err := Start(ctx, Options{ServerName: "t1", Port: -1, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer srv.Shutdown(ctx)
	url := srv.ClientURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":-1") {
		t.Fatalf("ClientURL = %q, want nats://127.0.0.1:<port>", url)
	}
	if got := srv.ClusterURL(); got != "" {
		t.Errorf("ClusterURL without a cluster = %q, want empty", got)
	}
	nc, err := nats.Connect(url, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	if err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	if _, err := js.Publish(ctx, "t.one", []byte("hello")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	msg, err := st.GetLastMsgForSubject(ctx, "t.one")
	if err != nil || string(msg.Data) != "hello" {
		t.Fatalf("GetLastMsgForSubject = %v, %v; want hello", msg, err)
	}
	nc.Close()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := nats.Connect(url, nats.Timeout(time.Second)); err == nil {
		t.Fatalf("connect after Shutdown succeeded; want refused")
	}
}

func TestStartNeedsStoreDir(t *testing.T) {
	_, err := Start(t.Context(), Options{Port: -1})
	if err == nil || !strings.Contains(err.Error(), "StoreDir") {
		t.Fatalf("Start without StoreDir: err = %v, want one naming StoreDir", err)
	}
}

func TestStartBadConfigFile(t *testing.T) {
	_, err := Start(t.Context(), Options{Port: -1, StoreDir: t.TempDir(), ConfigFile: "testdata/missing.conf"})
	if err == nil || !strings.Contains(err.Error(), "missing.conf") {
		t.Fatalf("Start with a missing config: err = %v, want one naming the file", err)
	}
}

func TestStartPortTaken(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a, err := Start(ctx, Options{Port: -1, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer a.Shutdown(ctx)
	port := a.NATS().Addr().(*net.TCPAddr).Port
	short, cancel2 := context.WithTimeout(ctx, 3*time.Second)
	defer cancel2()
	_, err = Start(short, Options{Port: port, StoreDir: t.TempDir()})
	want := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Start on a taken port: err = %v, want one naming %s", err, want)
	}
}

// No goroutine of the server outlives Shutdown.
func TestShutdownLeavesNoGoroutines(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	before := runtime.NumGoroutine()
	srv, err := Start(ctx, Options{Port: -1, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "G", Subjects: []string{"g"}}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// Exiting goroutines may still be unwinding: poll, with a deadline.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(5 * time.Second)
	for runtime.NumGoroutine() > before {
		select {
		case <-deadline:
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before Start, %d after Shutdown:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		case <-tick.C:
		}
	}
}
