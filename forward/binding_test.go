package forward

import (
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// The parent's "responses are bound" announcement is read as the wait
// starts and stays learned: a record withdrawn (a broker restart) or
// rewritten without it before an unbound plant is read does not let the
// plant decide. (Learned only when the unbound answer arrived, it did; a
// second review found that.)
func TestStickyBindingAnnouncedBeforeThePlant(t *testing.T) {
	for _, tc := range []struct {
		name        string
		noHeartbeat bool
		// change makes the record stop announcing binding after the
		// request is on disk and before the plant is read.
		change func(t *testing.T, c *Client)
	}{
		{"no-heartbeat child, broker withdrew its record", true, func(t *testing.T, c *Client) {
			hb := &mailbox.HeartbeatPublisher{Layout: c.Layout, Session: "parent"}
			if err := hb.Withdraw(); err != nil {
				t.Error(err)
			}
		}},
		{"no-heartbeat child, record rewritten without binding", true, func(t *testing.T, c *Client) {
			hb := &mailbox.HeartbeatPublisher{Layout: c.Layout, Session: "parent"}
			if err := hb.Publish(); err != nil {
				t.Error(err)
			}
		}},
		{"heartbeat judged, before the first liveness read", false, func(t *testing.T, c *Client) {
			hb := &mailbox.HeartbeatPublisher{Layout: c.Layout, Session: "parent"}
			if err := hb.Publish(); err != nil {
				t.Error(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, req := newClient(t)
			c.NoHeartbeat = tc.noHeartbeat
			c.LivenessInterval = time.Minute // the window is the first interval
			c.Timeout = 2 * time.Second      // ends the test if the plant is refused and nobody answers
			bindingParent(t, c)              // announced when the ask starts
			refused := make(chan error, 4)
			c.OnWarning = func(err error) {
				select {
				case refused <- err:
				default:
				}
			}
			reqData, _ := wire.EncodeRequest(req)
			serveWith(t, c, func(id string) {
				tc.change(t, c)
				plant, _ := wire.EncodeResponse(response(true)) // unbound approval
				if err := c.Layout.WriteResponse("parent", id, plant); err != nil {
					t.Error(err)
				}
				select {
				case <-refused:
					// The parent's own answer, a denial, bound.
					real, _ := wire.EncodeResponse(response(false).Bind(id, wire.RequestDigest(reqData)))
					if err := c.Layout.WriteResponse("parent", id, real); err != nil {
						t.Error(err)
					}
				case <-t.Context().Done():
				}
			})
			d := c.Forward(t.Context(), req)
			if d.Approved() {
				t.Fatalf("an unbound planted approval was taken although the parent announced binding when the ask started: %+v", d)
			}
		})
	}
}

// The same with a planted denial: the child reports a user's denial that
// nobody gave, where the parent announced binding when the ask started.
func TestStickyBindingPlantedDenial(t *testing.T) {
	c, req := newClient(t)
	c.Timeout = 2 * time.Second
	bindingParent(t, c)
	refused := make(chan error, 4)
	c.OnWarning = func(err error) {
		select {
		case refused <- err:
		default:
		}
	}
	reqData, _ := wire.EncodeRequest(req)
	serveWith(t, c, func(id string) {
		// The broker restarts: its record is withdrawn for a moment.
		if err := (&mailbox.HeartbeatPublisher{Layout: c.Layout, Session: "parent"}).Withdraw(); err != nil {
			t.Error(err)
		}
		plant, _ := wire.EncodeResponse(response(false)) // unbound denial
		if err := c.Layout.WriteResponse("parent", id, plant); err != nil {
			t.Error(err)
		}
		select {
		case <-refused:
			real, _ := wire.EncodeResponse(response(true).Bind(id, wire.RequestDigest(reqData)))
			if err := c.Layout.WriteResponse("parent", id, real); err != nil {
				t.Error(err)
			}
		case <-t.Context().Done():
		}
	})
	d := c.Forward(t.Context(), req)
	if !d.Approved() {
		t.Fatalf("decision = %+v, want the parent's own (bound) approval after the planted denial was refused", d)
	}
}
