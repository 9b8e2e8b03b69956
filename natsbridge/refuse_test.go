package natsbridge

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// Every message the bridge must not serve is acked and logged with its
// reason, and nothing reaches the inbox; once its response subject is
// known (the body decoded as a request whose id is the subject's) it is
// answered "unavailable", bound to its bytes, so that its child does not
// wait for its timeout.
func TestRefusals(t *testing.T) {
	e := newEnv(t)
	b := e.newBridge()
	e.startBridge(b)
	// A file child's request holds this id in the inbox.
	fileReq, fileData := request(t, "ls -la")
	if err := e.layout.WriteRequest(session, fileReq.ID, fileData); err != nil {
		t.Fatal(err)
	}

	type msg struct {
		subject string
		data    []byte
		req     *wire.Request // the request the answer binds, when answered
	}
	cases := []struct {
		name   string
		make   func(t *testing.T) msg
		reason string
	}{
		{"invalid owner", func(t *testing.T) msg {
			req, data := request(t, "ls")
			tok, _ := natsbox.Token(session)
			return msg{subject: "courier.req." + tok + "._bad." + req.ID, data: data}
		}, "not a request subject"},
		{"body not a request", func(t *testing.T) msg {
			subject, _ := natsbox.RequestSubject(session, owner, "perm-x-1")
			return msg{subject: subject, data: []byte(`{"id":"perm-x-1"}`)}
		}, "its body is not a request"},
		{"id not the subject's", func(t *testing.T) msg {
			_, data := request(t, "ls")
			subject, _ := natsbox.RequestSubject(session, owner, "perm-other-1")
			return msg{subject: subject, data: data}
		}, "is not the subject's"},
		{"another target session", func(t *testing.T) msg {
			req, _ := request(t, "ls")
			req.TargetSessionID = "someone-else"
			subject, _ := natsbox.RequestSubject(session, owner, req.ID)
			return msg{subject: subject, data: encode(t, req), req: &req}
		}, `targets session "someone-else"`},
		{"requester pid", func(t *testing.T) msg {
			req, _ := request(t, "ls")
			req.RequesterPID = 4242
			subject, _ := natsbox.RequestSubject(session, owner, req.ID)
			return msg{subject: subject, data: encode(t, req), req: &req}
		}, "requesterPid"},
		{"id of a file request", func(t *testing.T) msg {
			req, _ := request(t, "ls")
			req.ID = fileReq.ID
			subject, _ := natsbox.RequestSubject(session, owner, req.ID)
			return msg{subject: subject, data: encode(t, req), req: &req}
		}, "in use by a file request"},
		{"id of another owner's bridged request", func(t *testing.T) msg {
			req, data := request(t, "ls")
			before := len(e.lines(reviewlog.NATSRequestBridged))
			e.ask("bob", req.ID, data)
			eventually(t, "bob's request bridged", func() bool { return len(e.lines(reviewlog.NATSRequestBridged)) > before })
			subject, _ := natsbox.RequestSubject(session, owner, req.ID)
			return msg{subject: subject, data: data, req: &req}
		}, "in use by another owner's request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.make(t)
			before := len(e.lines(reviewlog.NATSRequestRefused))
			var answered chan []byte
			if m.req != nil {
				s := e.listen(owner, m.req.ID)
				answered = make(chan []byte, 1)
				go func() {
					if got, err := s.NextMsg(wait); err == nil {
						answered <- got.Data
					}
					close(answered)
				}()
			}
			e.publish(m.subject, "", m.data)
			eventually(t, "the refusal logged", func() bool { return len(e.lines(reviewlog.NATSRequestRefused)) > before })
			entry := e.lines(reviewlog.NATSRequestRefused)[before]
			if entry["subject"] != m.subject || !strings.Contains(entry["reason"].(string), c.reason) {
				t.Errorf("entry %v: want subject %s, a reason saying %q", entry, m.subject, c.reason)
			}
			if entry["answered"] != (m.req != nil) {
				t.Errorf("entry %v: answered, want %v", entry, m.req != nil)
			}
			if m.req != nil {
				got, ok := <-answered
				if !ok {
					t.Fatal("no unavailable answer")
				}
				resp := decode(t, got, *m.req, m.data)
				if _, ok := resp.DecidedBy.(provenance.Unavailable); !ok || resp.Approved {
					t.Errorf("answer %s: want unavailable", got)
				}
			}
			eventually(t, "the refusal acked", func() bool { return e.pending() == 0 })
		})
	}
	if n := len(e.lines(reviewlog.NATSRequestBridged)); n != 1 {
		t.Errorf("%d requests bridged, want bob's alone", n)
	}
	// The file request is still the file child's.
	path, _ := e.layout.RequestPath(session, fileReq.ID)
	if data, _ := os.ReadFile(path); string(data) != string(fileData) {
		t.Errorf("the file request was replaced: %s", data)
	}

	// A subject of another session never reaches this session's
	// consumer; the bridge refuses one all the same.
	other, _ := natsbox.RequestSubject("another-session", owner, "perm-y-1")
	_, data := request(t, "ls")
	if ack, _ := b.handle(context.Background(), other, data, nil); !ack {
		t.Error("a refusal is not acked")
	}
	entries := e.lines(reviewlog.NATSRequestRefused)
	if last := entries[len(entries)-1]; last["subject"] != other || !strings.Contains(last["reason"].(string), "is not this session's") {
		t.Errorf("entry %v", last)
	}
}
