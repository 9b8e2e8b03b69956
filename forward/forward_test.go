package forward

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

func TestResolveTarget(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name     string
		explicit string
		self     string
		env      map[string]string
		want     string
		ok       bool
	}{
		{"explicit wins", "p1", "c", map[string]string{EnvRouterParent: "p2", EnvSubagentParent: "p3"}, "p1", true},
		{"router before subagent", "", "c", map[string]string{EnvRouterParent: "p2", EnvSubagentParent: "p3"}, "p2", true},
		{"subagent variable", "", "c", map[string]string{EnvSubagentParent: "p3"}, "p3", true},
		{"self skipped", "c", "c", map[string]string{EnvSubagentParent: "p3"}, "p3", true},
		{"self skipped everywhere", "c", "c", map[string]string{EnvSubagentParent: " c "}, "", false},
		{"unknown is nobody", "unknown", "c", nil, "", false},
		{"trimmed", "  p1\n", "c", nil, "p1", true},
		{"nothing", "", "c", nil, "", false},
	}
	for _, tt := range tests {
		got, ok := ResolveTarget(tt.explicit, tt.self, env(tt.env))
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: ResolveTarget = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{600 * time.Second: "600", 1500 * time.Millisecond: "1.5", time.Second: "1", 250 * time.Millisecond: "0.25"} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%s) = %q, want %q", d, got, want)
		}
	}
}

func newClient(t *testing.T) (*Client, wire.Request) {
	t.Helper()
	layout := mailbox.Layout{Root: t.TempDir()}
	req, err := Ask{Session: "child", Agent: "Explore", Surface: "bash", Value: "ls", Cwd: "/w"}.Request("perm-test-1", "parent", 1)
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{Layout: layout, NoHeartbeat: true, Timeout: time.Minute, PollFirst: testPollFirst}
	t.Cleanup(c.Close)
	return c, req
}

// testPollFirst is the PollFirst of newClient's Clients:
// TestPollFirstKeepsTheGuarantees runs the tests again with a first look.
var testPollFirst time.Duration

// serveOnce answers the first request that appears, in process, with resp.
func serveOnce(t *testing.T, c *Client, resp wire.Response) {
	t.Helper()
	if err := c.Layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	dir, _ := c.Layout.RequestsDir("parent")
	w := mailbox.NewWatcher(dir, mailbox.WatchOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		go w.Run(ctx)
		select {
		case name := <-w.Ready():
			id, _ := mailbox.RequestIDFromName(name)
			data, _ := wire.EncodeResponse(resp)
			if err := c.Layout.WriteResponse("parent", id, data); err != nil {
				t.Error(err)
			}
		case <-ctx.Done():
		}
	}()
}

func TestForwardNestsTheAnswer(t *testing.T) {
	c, req := newClient(t)
	serveOnce(t, c, wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: "parent", RespondedAt: 1, DecidedBy: provenance.Rule{Surface: "bash", Pattern: provenance.Str("ls *")}})
	d := c.Forward(t.Context(), req)
	want := provenance.Forwarded{ResponderSessionID: provenance.Str("parent"), Decision: provenance.Rule{Surface: "bash", Pattern: provenance.Str("ls *")}}
	if !d.Approved() || !reflect.DeepEqual(d.DecidedBy, want) {
		t.Fatalf("decision = %+v", d)
	}
	assertNoMail(t, c)
}

func TestForwardGivesUpWhenCancelled(t *testing.T) {
	c, req := newClient(t)
	ctx, cancel := context.WithCancel(t.Context())
	result := make(chan decision.Decision)
	go func() { result <- c.Forward(ctx, req) }()
	// Wait until the request is on disk, then cancel.
	reqPath, _ := c.Layout.RequestPath("parent", req.ID)
	w, err := mailbox.WatchFile(t.Context(), reqPath, mailbox.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	cancel()
	d := <-result
	if d.Approved() || !d.Unavailable() || d.DenialReason != ReasonSessionEnded {
		t.Fatalf("decision = %+v", d)
	}
	assertNoMail(t, c)
}

func TestForwardTimesOut(t *testing.T) {
	c, req := newClient(t)
	c.Timeout = 50 * time.Millisecond
	d := c.Forward(t.Context(), req)
	if !d.Unavailable() || d.DenialReason != "Session 'parent' did not answer within 0.05s" {
		t.Fatalf("decision = %+v", d)
	}
	assertNoMail(t, c)
}

// A symlink planted as the answer before the parent answers is neither
// followed nor taken as the answer: the child waits, and takes the
// parent's answer written over it. (Before the binding,
// docs/decisions/0006-response-binding.md, the plant ended the ask as
// unreadable, so a planted file could cancel any ask.)
func TestForwardRefusesAPlantAndWaitsForTheAnswer(t *testing.T) {
	c, req := newClient(t)
	if err := c.Layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	respPath, _ := c.Layout.ResponsePath("parent", req.ID)
	if err := os.Symlink("/etc/passwd", respPath); err != nil {
		t.Fatal(err)
	}
	refused := make(chan error, 4)
	c.OnWarning = func(err error) { refused <- err }
	go func() {
		// The parent answers only once the child has refused the plant.
		<-refused
		data, _ := wire.EncodeResponse(wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: "parent", RespondedAt: 1})
		if err := c.Layout.WriteResponse("parent", req.ID, data); err != nil {
			t.Error(err)
		}
	}()
	if d := c.Forward(t.Context(), req); !d.Approved() {
		t.Fatalf("decision = %+v", d)
	}
	assertNoMail(t, c)
}

// An answer that cannot be read, once the parent has removed the request
// (it answered: pi's parent writes, then removes), ends the ask as pi
// does: unavailable, never retried.
func TestForwardUnreadableAnswer(t *testing.T) {
	c, req := newClient(t)
	serveWith(t, c, func(id string) {
		respPath, _ := c.Layout.ResponsePath("parent", id)
		reqPath, _ := c.Layout.RequestPath("parent", id)
		if err := os.WriteFile(respPath, []byte(`{"approved":tru`), 0o600); err != nil {
			t.Error(err)
		}
		os.Remove(reqPath)
	})
	d := c.Forward(t.Context(), req)
	if !d.Unavailable() || d.DenialReason != ReasonUnreadable {
		t.Fatalf("decision = %+v", d)
	}
	assertNoMail(t, c)
}

// serveWith runs answer with the id of the first request that appears.
func serveWith(t *testing.T, c *Client, answer func(id string)) {
	t.Helper()
	if err := c.Layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	dir, _ := c.Layout.RequestsDir("parent")
	w := mailbox.NewWatcher(dir, mailbox.WatchOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		watched := make(chan struct{})
		go func() { defer close(watched); w.Run(ctx) }()
		defer func() { <-watched }()
		select {
		case name := <-w.Ready():
			id, _ := mailbox.RequestIDFromName(name)
			answer(id)
			w.Done(name)
			cancel()
		case <-ctx.Done():
		}
	}()
}

// bindingParent publishes a courier heartbeat (responses are bound) for
// "parent" until the test ends.
func bindingParent(t *testing.T, c *Client) {
	t.Helper()
	hb := &mailbox.HeartbeatPublisher{Layout: c.Layout, Session: "parent", ResponseBinding: wire.BindingSHA256}
	if err := hb.Publish(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hb.Withdraw() })
}

func response(approved bool) wire.Response {
	if approved {
		return wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: "parent", RespondedAt: 1}
	}
	return wire.Response{Approved: false, State: wire.StateDenied, ResponderSessionID: "parent", RespondedAt: 1}
}

// An approval copied from another request, or an unbound one where the
// parent binds, planted before the parent answers, is refused; the
// parent's own (deny) answer, written over it, is the one the child takes
// (docs/decisions/0006-response-binding.md).
func TestForwardRefusesForgedAnswers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bind  bool // the parent announces bound answers
		plant func(other wire.Response) wire.Response
	}{
		{"copied from another request", false, func(r wire.Response) wire.Response {
			return r.Bind("perm-another", wire.RequestDigest([]byte("x")))
		}},
		{"same id, other bytes", false, func(r wire.Response) wire.Response {
			return r.Bind("perm-test-1", wire.RequestDigest([]byte("x")))
		}},
		{"unbound where the parent binds", true, func(r wire.Response) wire.Response { return r }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, req := newClient(t)
			c.LivenessInterval = 10 * time.Millisecond
			if tc.bind {
				bindingParent(t, c)
			}
			refused := make(chan error, 4)
			c.OnWarning = func(err error) { refused <- err }
			reqData, _ := wire.EncodeRequest(req)
			serveWith(t, c, func(id string) {
				forged, _ := wire.EncodeResponse(tc.plant(response(true)))
				if err := c.Layout.WriteResponse("parent", id, forged); err != nil {
					t.Error(err)
				}
				<-refused
				real, _ := wire.EncodeResponse(response(false).Bind(id, wire.RequestDigest(reqData)))
				if err := c.Layout.WriteResponse("parent", id, real); err != nil {
					t.Error(err)
				}
			})
			d := c.Forward(t.Context(), req)
			if d.Approved() || d.Unavailable() {
				t.Fatalf("decision = %+v, want the parent's denial", d)
			}
			assertNoMail(t, c)
		})
	}
}

// The parent's answer renamed over a plant while the child refuses the
// plant (after reading it, before noting which file it refused) is read:
// the child used to note the answer as the refused file and wait out its
// timeout. TestForwardRefusesForgedAnswers met this race at random on a
// loaded machine; here the answer is written from the refusal's warning.
func TestForwardRereadsAnAnswerThatReplacedTheRefusedPlant(t *testing.T) {
	c, req := newClient(t)
	c.LivenessInterval = 10 * time.Millisecond
	c.Timeout = 5 * time.Second
	reqData, _ := wire.EncodeRequest(req)
	var once sync.Once
	c.OnWarning = func(error) {
		once.Do(func() {
			real, _ := wire.EncodeResponse(response(false).Bind(req.ID, wire.RequestDigest(reqData)))
			if err := c.Layout.WriteResponse("parent", req.ID, real); err != nil {
				t.Error(err)
			}
		})
	}
	serveWith(t, c, func(id string) {
		forged, _ := wire.EncodeResponse(response(true).Bind("perm-another", wire.RequestDigest([]byte("x"))))
		if err := c.Layout.WriteResponse("parent", id, forged); err != nil {
			t.Error(err)
		}
	})
	d := c.Forward(t.Context(), req)
	if d.Approved() || d.Unavailable() {
		t.Fatalf("decision = %+v, want the parent's denial", d)
	}
	assertNoMail(t, c)
}

// A request replaced before the broker read it gets an answer bound to the
// replacement's bytes: the child that wrote the original refuses it, and
// gives up once the request is gone (the broker answered).
func TestForwardRefusesAnAnswerToReplacedRequestBytes(t *testing.T) {
	c, req := newClient(t)
	serveWith(t, c, func(id string) {
		reqPath, _ := c.Layout.RequestPath("parent", id)
		swapped := req
		swapped.Value = "git status"
		data, _ := wire.EncodeRequest(swapped)
		answer, _ := wire.EncodeResponse(response(true).Bind(id, wire.RequestDigest(data)))
		if err := c.Layout.WriteResponse("parent", id, answer); err != nil {
			t.Error(err)
		}
		os.Remove(reqPath)
	})
	d := c.Forward(t.Context(), req)
	if d.Approved() || !d.Unavailable() || d.DenialReason != ReasonNotBound {
		t.Fatalf("decision = %+v", d)
	}
	assertNoMail(t, c)
}

// The child removes its request before the answer: a broker restarted in
// between must never find the request without its answer (it would answer
// a second time; docs/decisions/0006-response-binding.md).
func TestForwardRemovesTheRequestBeforeTheAnswer(t *testing.T) {
	c, req := newClient(t)
	reqDir, _ := c.Layout.RequestsDir("parent")
	respDir, _ := c.Layout.ResponsesDir("parent")
	if err := c.Layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, d := range []string{reqDir, respDir} {
		if err := w.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	serveOnce(t, c, response(true))
	if d := c.Forward(t.Context(), req); !d.Approved() {
		t.Fatalf("decision = %+v", d)
	}
	var removed []string
	timeout := time.After(10 * time.Second)
	for len(removed) < 2 {
		select {
		case ev := <-w.Events:
			if ev.Has(fsnotify.Remove) {
				removed = append(removed, filepath.Base(filepath.Dir(ev.Name)))
			}
		case err := <-w.Errors:
			t.Fatal(err)
		case <-timeout:
			t.Fatalf("removals seen: %v", removed)
		}
	}
	if removed[0] != "requests" {
		t.Errorf("removal order %v, want the request first", removed)
	}
}

func assertNoMail(t *testing.T, c *Client) {
	t.Helper()
	for _, dir := range []func(string) (string, error){c.Layout.RequestsDir, c.Layout.ResponsesDir} {
		d, _ := dir("parent")
		entries, _ := os.ReadDir(d)
		if len(entries) > 0 {
			t.Errorf("%s still holds %d entries", d, len(entries))
		}
	}
}
