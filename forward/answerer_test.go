package forward

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// serveAll answers every request for session in process until the test
// ends, as a broker does: a fresh heartbeat that announces bound answers,
// an approval bound to each request's bytes, then the request removed.
func serveAll(tb testing.TB, layout mailbox.Layout, session string) {
	tb.Helper()
	if err := layout.EnsureInbox(session); err != nil {
		tb.Fatal(err)
	}
	dir, _ := layout.RequestsDir(session)
	w := mailbox.NewWatcher(dir, mailbox.WatchOptions{})
	hb := &mailbox.HeartbeatPublisher{Layout: layout, Session: session, ResponseBinding: wire.BindingSHA256}
	if err := hb.Publish(); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	tb.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { w.Run(ctx) })
	wg.Go(func() { hb.Run(ctx, 0, nil) })
	wg.Go(func() {
		for name := range w.Ready() {
			if id, err := mailbox.RequestIDFromName(name); err == nil {
				answerBound(tb, layout, session, id, response(true))
				reqPath, _ := layout.RequestPath(session, id)
				os.Remove(reqPath)
			}
			w.Done(name)
		}
	})
}

// answerBound writes resp as session's answer to request id, bound to the
// request's bytes on disk. A request already gone is not answered.
func answerBound(tb testing.TB, layout mailbox.Layout, session, id string, resp wire.Response) {
	reqPath, _ := layout.RequestPath(session, id)
	data, err := mailbox.ReadFile(reqPath)
	if err != nil {
		return
	}
	resp.ResponderSessionID = session
	out, err := wire.EncodeResponse(resp.Bind(id, wire.RequestDigest(data)))
	if err == nil {
		err = layout.WriteResponse(session, id, out)
	}
	if err != nil {
		tb.Error(err)
	}
}
