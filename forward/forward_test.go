package forward

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
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

func newClient(t *testing.T) (*Client, mailbox.Request) {
	t.Helper()
	layout := mailbox.Layout{Root: t.TempDir()}
	req, err := Ask{Session: "child", Agent: "Explore", Surface: "bash", Value: "ls", Cwd: "/w"}.Request("perm-test-1", "parent", 1)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{Layout: layout, NoHeartbeat: true, Timeout: time.Minute}, req
}

// serveOnce answers the first request that appears, in process, with resp.
func serveOnce(t *testing.T, c *Client, resp mailbox.Response) {
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
			data, _ := mailbox.EncodeResponse(resp)
			if err := c.Layout.WriteResponse("parent", id, data); err != nil {
				t.Error(err)
			}
		case <-ctx.Done():
		}
	}()
}

func TestForwardNestsTheAnswer(t *testing.T) {
	c, req := newClient(t)
	serveOnce(t, c, mailbox.Response{Approved: true, State: mailbox.StateApproved, ResponderSessionID: "parent", RespondedAt: 1, DecidedBy: provenance.Rule{Surface: "bash", Pattern: provenance.Str("ls *")}})
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

func TestForwardUnreadableAnswer(t *testing.T) {
	c, req := newClient(t)
	if err := c.Layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	// A symlink planted as the answer must not be followed.
	respPath, _ := c.Layout.ResponsePath("parent", req.ID)
	if err := os.Symlink("/etc/passwd", respPath); err != nil {
		t.Fatal(err)
	}
	d := c.Forward(t.Context(), req)
	if !d.Unavailable() || d.DenialReason != ReasonUnreadable {
		t.Fatalf("decision = %+v", d)
	}
	if _, err := os.Lstat(respPath); !os.IsNotExist(err) {
		t.Errorf("the planted answer is still there: %v", err)
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
