package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// publish writes req as a child would and returns its bytes.
func publish(t *testing.T, layout mailbox.Layout, req wire.Request) []byte {
	t.Helper()
	data, err := wire.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	writeRequest(t, layout, req.ID+".json", data)
	return data
}

// collect waits for the response that answers req's bytes data (an
// answer to other bytes may be there first), and removes it, as the
// child does.
func collect(t *testing.T, layout mailbox.Layout, req wire.Request, data []byte) wire.Response {
	t.Helper()
	path, _ := layout.ResponsePath("parent", req.ID)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if got, err := mailbox.ReadFile(path); err == nil {
			resp, _, err := wire.DecodeResponse(got)
			if err != nil {
				t.Fatal(err)
			}
			if wire.CheckBinding(resp, req.ID, wire.RequestDigest(data), true) == nil {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
				return resp
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no response answers these bytes of %s", req.ID)
		}
	}
}

// A request id answered in this run and seen again: the same bytes are a
// re-delivery, dropped as before; other bytes are a different request
// reusing the id, answered "unavailable" at once with the reason logged
// (on main it was removed unanswered and its child waited out its
// timeout), also when the first answer was not collected yet.
func TestReusedRequestID(t *testing.T) {
	const id = "perm-reused"
	tests := []struct {
		name string
		// collectFirst: the first request's child took its answer before
		// the second request came.
		collectFirst bool
		same         bool
	}{
		{"the same request again", true, true},
		{"another request, the first answer collected", true, false},
		{"another request, the first answer still there", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "review.jsonl")
			log, err := reviewlog.Open(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			f := newFixtureWith(t, mailbox.Layout{Root: t.TempDir()}, Headless{}, func(b *Broker) { b.Log = log })
			first := request(t, id, "child", "git status --short")
			firstData := publish(t, f.layout, first)
			if tt.collectFirst {
				if resp := collect(t, f.layout, first, firstData); !resp.Approved {
					t.Fatalf("the first request: %+v", resp)
				}
			} else {
				path, _ := f.layout.RequestPath("parent", id)
				waitGone(t, path)
			}

			second := request(t, id, "other", "npm install")
			if tt.same {
				second = first
			}
			secondData := publish(t, f.layout, second)
			path, _ := f.layout.RequestPath("parent", id)
			if tt.same {
				waitGone(t, path)
				f.waitSettled(t)
				noResponse(t, f.layout, first)
				return
			}
			resp := collect(t, f.layout, second, secondData)
			u, ok := provenance.Effective(resp.DecidedBy).(provenance.Unavailable)
			if !ok || resp.Approved || !strings.Contains(u.Reason, "was already answered in this session for a different request") {
				t.Errorf("the request reusing the id: %+v", resp)
			}
			waitGone(t, path)
			f.stop()
			if err := log.Sync(); err != nil {
				t.Fatal(err)
			}
			warned := false
			for _, e := range readLog(t, logPath) {
				if m, _ := e["message"].(string); e["event"] == reviewlog.ForwardingWarning && strings.Contains(m, "reused the id") {
					warned = true
				}
			}
			if !warned {
				t.Error("no review entry says the id was reused")
			}
		})
	}
}

// Across a restart the broker keeps no memory of the ids it answered; a
// request reusing one is decided on its own (answeredOnDisk compares the
// request bytes), whether or not the first answer is still on disk.
func TestReusedRequestIDAfterRestart(t *testing.T) {
	for _, collectFirst := range []bool{true, false} {
		name := map[bool]string{true: "first answer collected", false: "first answer still there"}[collectFirst]
		t.Run(name, func(t *testing.T) {
			layout := mailbox.Layout{Root: t.TempDir()}
			f := newFixtureAt(t, layout, Headless{})
			first := request(t, "perm-reused", "child", "git status --short")
			firstData := publish(t, layout, first)
			if collectFirst {
				collect(t, layout, first, firstData)
			} else {
				path, _ := layout.RequestPath("parent", first.ID)
				waitGone(t, path)
			}
			f.stop()

			newFixtureAt(t, layout, Headless{})
			second := request(t, "perm-reused", "other", "npm install")
			resp := collect(t, layout, second, publish(t, layout, second))
			d := decision.FromResponse(resp)
			if rule, ok := provenance.Effective(d.DecidedBy).(provenance.Rule); !ok || d.Approved() || *rule.Pattern != "npm *" {
				t.Errorf("the request reusing the id after a restart: %+v, want denied by the rule npm *", d)
			}
		})
	}
}
