//go:build nats

package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsembed"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

const natsTestWait = 20 * time.Second

// natsBroker starts an embedded engine and the smallest broker for
// session: a fresh heartbeat announcing bound answers, and a bound
// answer to every request, allowing `ls` and denying anything else by
// rule. It returns the engine's URL.
func natsBroker(t *testing.T, session string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), natsTestWait)
	defer cancel()
	srv, err := natsembed.Start(ctx, natsembed.Options{ServerName: "child-test", Port: -1, StoreDir: t.TempDir(), NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), natsTestWait)
		defer cancel()
		srv.Shutdown(ctx)
	})
	nc, err := natsbox.Connect(ctx, natsbox.Options{URL: srv.ClientURL(), Local: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := natsbox.Ensure(ctx, js, natsbox.Config{Replicas: 1}); err != nil {
		t.Fatal(err)
	}
	hb := wire.Heartbeat{SessionID: session, PID: os.Getpid(), UpdatedAt: time.Now().UnixMilli(), ResponseBinding: wire.BindingSHA256}
	if err := natsbox.PublishHeartbeat(ctx, js, session, hb); err != nil {
		t.Fatal(err)
	}
	filter, _ := natsbox.SessionRequestFilter(session)
	cons, err := js.CreateOrUpdateConsumer(ctx, natsbox.StreamRequests, jetstream.ConsumerConfig{
		Durable: "child-test", FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		defer m.Ack()
		req, _, err := wire.DecodeRequest(m.Data())
		if err != nil {
			t.Errorf("broker: %v", err)
			return
		}
		resp := wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: session, RespondedAt: 1,
			DecidedBy: provenance.Rule{Surface: "bash", Pattern: provenance.Str("ls *")}}
		if req.Value != "ls" {
			resp = wire.Response{State: wire.StateDenied, DenialReason: "no", ResponderSessionID: session, RespondedAt: 1,
				DecidedBy: provenance.Rule{Surface: "bash", Pattern: provenance.Str("*")}}
		}
		data, _ := wire.EncodeResponse(resp.Bind(req.ID, wire.RequestDigest(m.Data())))
		_, _, o, _, _ := natsbox.ParseSubject(m.Subject())
		subj, _ := natsbox.ResponseSubject(session, o, req.ID)
		id, _ := natsbox.MsgID(session, o, req.ID)
		pctx, cancel := context.WithTimeout(context.Background(), natsTestWait)
		defer cancel()
		// The test may end once the child has the answer, before the
		// acknowledgement is back: only an error while it runs counts.
		if _, err := js.PublishMsg(pctx, &nats.Msg{Subject: subj, Data: data}, jetstream.WithMsgID(id)); err != nil && t.Context().Err() == nil {
			t.Errorf("broker: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop)
	return srv.ClientURL()
}

// closedPort is a loopback URL nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return "nats://127.0.0.1:" + strconv.Itoa(port)
}

// stalledEngine is a loopback URL whose listener accepts connections and
// never says a word: a partition, or a proxy that stalls.
func stalledEngine(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return "nats://" + l.Addr().String()
}

// TestAskOverNATS: child ask over NATS prints the decision and exits as
// over the mailbox, with no mailbox root at all; an engine it cannot
// reach, or one that accepts and stalls, is unavailable within --timeout
// (the stalled one took the 5 s of a dial's own timeout before the
// connection raced the ask's deadline); a missing owner is exit 2.
func TestAskOverNATS(t *testing.T) {
	url := natsBroker(t, "parent")
	noRoot := filepath.Join(t.TempDir(), "no-such-root")
	base := []string{"ask", "--nats-local", "--nats-owner", "alice", "--parent", "parent", "--session", "child-1", "--root", noRoot, "--surface", "bash"}
	for _, tt := range []struct {
		name     string
		args     []string
		env      map[string]string
		wantExit int
		wantOut  []string
		within   time.Duration
	}{
		{"allowed", append(base, "--transport", url, "--value", "ls"), nil, exitAllowed,
			[]string{`"approved":true`, `"kind":"forwarded"`, `"responderSessionId":"parent"`}, natsTestWait},
		{"denied, transport from the environment", append(base, "--value", "rm -rf /"), map[string]string{envTransport: url}, exitDenied,
			[]string{`"approved":false`, `"denialReason":"no"`}, natsTestWait},
		{"unreachable", append(base, "--transport", closedPort(t), "--value", "ls", "--timeout", "1500ms"), nil, exitUnavailable,
			[]string{`"unavailable":true`, "could not be written"}, 3 * time.Second},
		{"stalled", append(base, "--transport", stalledEngine(t), "--value", "ls", "--timeout", "1500ms"), nil, exitUnavailable,
			[]string{`"unavailable":true`, "could not be written"}, 3 * time.Second},
		{"no owner", []string{"ask", "--transport", url, "--nats-local", "--parent", "parent", "--session", "c", "--surface", "bash", "--value", "ls"}, nil, exitUsage,
			nil, natsTestWait},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(t.Context(), tt.args, func(k string) string { return tt.env[k] }, strings.NewReader(""), &stdout, &stderr)
			if code != tt.wantExit {
				t.Fatalf("exit %d, want %d; stdout %q, stderr %q", code, tt.wantExit, stdout.String(), stderr.String())
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout %q lacks %q", stdout.String(), w)
				}
			}
			if took := time.Since(start); took > tt.within {
				t.Errorf("took %s, want within %s", took, tt.within)
			}
		})
	}
}

// TestHookOverNATS: a subagent's call in a hook event is forwarded over
// NATS and answered in the agent's shape.
func TestHookOverNATS(t *testing.T) {
	url := natsBroker(t, "courier")
	event := `{"session_id": "b648dec7", "cwd": "/work/proj", "agent_id": "a8f2c355829900d95", "agent_type": "general-purpose", "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "ls"}}`
	var stdout, stderr bytes.Buffer
	args := []string{"hook", "claude-code", "--transport", url, "--nats-local", "--nats-owner", "alice", "--root", filepath.Join(t.TempDir(), "none")}
	if code := run(t.Context(), args, func(string) string { return "" }, strings.NewReader(event), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"behavior":"allow"`) {
		t.Fatalf("stdout %q, stderr %q: want an allow", stdout.String(), stderr.String())
	}
}

// TestHookPrintConfigOverNATS: the settings run this binary (the NATS
// one) with the transport flags given, the files among them made
// absolute, and a bool flag in the one-word form a shell passes on.
func TestHookPrintConfigOverNATS(t *testing.T) {
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	args := []string{"hook", "claude-code", "--print-config", "--transport", "nats://127.0.0.1:4222", "--nats-local", "--nats-owner", "alice", "--nats-password-file", "alice.pw"}
	if code := run(t.Context(), args, func(string) string { return "" }, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	abs, err := filepath.Abs("alice.pw")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--transport nats://127.0.0.1:4222", "--nats-local=true", "--nats-owner alice", "--nats-password-file " + abs} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("settings lack %q:\n%s", want, stdout.String())
		}
	}
}

// TestHookOverNATSKeepsItsDeadline: whatever the engine does (nothing
// listens, it accepts and never greets, it takes the request and nobody
// answers), child hook ends within --timeout and a small margin, with no
// decision on stdout (the agent asks its user) and exit 0. The overrun is
// logged.
func TestHookOverNATSKeepsItsDeadline(t *testing.T) {
	url := natsBroker(t, "courier")
	// A session whose broker is alive (a fresh heartbeat) and takes
	// nothing: the request waits in the stream, nobody answers.
	ctx, cancel := context.WithTimeout(t.Context(), natsTestWait)
	defer cancel()
	nc, err := natsbox.Connect(ctx, natsbox.Options{URL: url, Local: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	hb := wire.Heartbeat{SessionID: "silent", PID: os.Getpid(), UpdatedAt: time.Now().UnixMilli(), ResponseBinding: wire.BindingSHA256}
	if err := natsbox.PublishHeartbeat(ctx, js, "silent", hb); err != nil {
		t.Fatal(err)
	}
	const timeout = 1500 * time.Millisecond
	const margin = 500 * time.Millisecond
	event := `{"session_id": "b648dec7", "cwd": "/work/proj", "agent_id": "a8f2c355829900d95", "agent_type": "general-purpose", "hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "ls"}}`
	for _, tt := range []struct {
		name, url, parent string
		// wantDiag is in the diagnostic line: the reason, which names
		// --timeout as given.
		wantDiag string
	}{
		{"unreachable", closedPort(t), "courier", "could not be written"},
		{"stalled greeting", stalledEngine(t), "courier", "could not be written"},
		{"nobody answers", url, "silent", "did not answer within 1.5s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := []string{"hook", "claude-code", "--transport", tt.url, "--nats-local", "--nats-owner", "alice",
				"--parent", tt.parent, "--timeout", timeout.String(), "--root", filepath.Join(t.TempDir(), "none")}
			start := time.Now()
			code := run(t.Context(), args, func(string) string { return "" }, strings.NewReader(event), &stdout, &stderr)
			took := time.Since(start)
			t.Logf("ended after %s (%s past --timeout); stderr: %s", took.Round(time.Millisecond), (took - timeout).Round(time.Millisecond), strings.TrimSpace(stderr.String()))
			if code != 0 || stdout.Len() != 0 {
				t.Errorf("exit %d, stdout %q: want exit 0 and no decision", code, stdout.String())
			}
			if took > timeout+margin {
				t.Errorf("took %s, want within %s", took, timeout+margin)
			}
			if !strings.Contains(stderr.String(), tt.wantDiag) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.wantDiag)
			}
		})
	}
}

// TestNATSAsyncErrorsAreFewWarnings: the engine's asynchronous errors
// (nats.go writes each to stderr by itself when no handler is set: a
// flood on the response subject made one line per slow-consumer episode)
// are warnings, at most maxAsyncErrors and one saying more came.
func TestNATSAsyncErrorsAreFewWarnings(t *testing.T) {
	var got []string
	fw, err := newNATSForwarder("nats://127.0.0.1:4222", natsFlags{owner: "alice", local: true}, time.Second, time.Now().Add(time.Second), nil,
		func(err error) { got = append(got, err.Error()) })
	if err != nil {
		t.Fatal(err)
	}
	f := fw.(*natsForwarder)
	for range 50 {
		f.asyncError(nil, nil, nats.ErrSlowConsumer)
	}
	if len(got) != maxAsyncErrors+1 || !strings.Contains(got[maxAsyncErrors], "no more are shown") {
		t.Fatalf("warnings %q: want %d, the last saying no more are shown", got, maxAsyncErrors+1)
	}
}
