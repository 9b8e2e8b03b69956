package serve

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// maxRespondedAtStart bounds the response names remembered at start;
// past it the list is not kept, and every request is looked for on disk.
const maxRespondedAtStart = 1 << 16

// responsesAtStart lists the ids of the response files in responses/ when
// serving starts. A predecessor's answer, left by a broker that died
// between writing it and removing its request (answeredOnDisk), can only
// be one of them: once this broker serves the session, no other courier
// broker answers there (one a session: the serving lock). A pi parent
// takes no lock, but its answers are unbound, and were answered over
// before this list too. It returns nil when the list is not
// known (unreadable, or longer than maxRespondedAtStart): then every
// request is looked for, as without the list.
//
// Looking for every request's answer on disk cost a lookup of a name that
// is almost never there, which on tmpfs takes the directory's lock: under
// a flood, a tenth of the broker's CPU and a queue on responses/' lock
// behind the broker's own writes there.
func (b *Broker) responsesAtStart() map[string]struct{} {
	dir, err := b.Layout.ResponsesDir(b.Session)
	if err != nil {
		return nil
	}
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]struct{}{}
	}
	if err != nil {
		return nil
	}
	defer d.Close()
	names, err := d.Readdirnames(maxRespondedAtStart + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil
	}
	if len(names) > maxRespondedAtStart {
		return nil
	}
	ids := make(map[string]struct{}, len(names))
	for _, name := range names {
		if id, err := mailbox.RequestIDFromName(name); err == nil {
			ids[id] = struct{}{}
		}
	}
	return ids
}

// mayBeAnsweredOnDisk says whether a response to id may have been left by
// a predecessor (responsesAtStart), or by this run under an id it
// forgot early (forgotten): only then is it looked for before the
// request is decided.
func (b *Broker) mayBeAnsweredOnDisk(id string) bool {
	if b.respondedAtStart == nil {
		return true
	}
	if _, ok := b.respondedAtStart[id]; ok {
		return true
	}
	return b.forgotten.MayContain(id, b.now())
}

// forgetWindow is how long after an id is forgotten early its answer may
// still be on disk: housekeeping removes an answer the forwarding timeout
// has passed at its next run, one housekeeping interval later if it runs
// on time; two more intervals allow for housekeeping that runs late. Until
// then an answer found when this run answers the id again is this run's
// own, not a plant (answeredOver), and a request under the id is looked
// for on disk, so that it is never answered twice.
func (b *Broker) forgetWindow() time.Duration {
	return b.forwardingTimeout() + 3*housekeepingEvery*b.sweepInterval()
}

// answeredThisRun says whether this run answered id before (its answer,
// not a plant, may be what a later answer of the id replaced). This
// request's own answer is recorded only after its write.
func (b *Broker) answeredThisRun(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.answered[id]
	return ok
}

// answeredOver reports a response file found under req's answer's name
// when the answer was written (mailbox.Layout.WriteResponseOver), which
// this broker did not write and did not look at before deciding: planted
// since serving started. The answer replaced it, as answeredOnDisk's
// refusal of a plant found earlier does.
func (b *Broker) answeredOver(req *wire.Request, path, respPath string) {
	p := parties(req)
	b.log(reviewlog.ForwardingWarningEntry{
		Message:   "a response this broker did not write was already there; answered over it",
		RequestID: reviewlog.Str(req.ID), Parties: &p, RequestPath: path, ResponsePath: respPath,
	})
	b.report(fmt.Errorf("request %s: answered over %s, a file this broker did not write, which does not answer it", req.ID, respPath))
}
