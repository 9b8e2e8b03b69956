package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/wire"
)

// outcome is what became of a request file the watcher delivered. The
// watcher hears of it in one place, release.
type outcome uint8

const (
	// answered: the response is written, then the request file removed.
	answered outcome = iota + 1
	// dropped: there is nothing (more) to answer. The file is gone, or
	// was rejected or orphaned and removed, or had been answered before
	// and is removed now, or the handler of the request in flight owns it.
	dropped
	// retry: look at the file again on the next event or rescan. It could
	// not be read, may still be being written, its answer could not be
	// written (the decision is kept, not made again: finish), or it is
	// answered but could not be removed (a read-only or failing mailbox),
	// so that it is not left in the inbox for the broker's life.
	retry
	// queued: a job waits for the requester's turn (fair.go) and
	// releases the file when it is done; an ask it escalates is released
	// once it is concluded.
	queued
)

// release tells the watcher what became of the request file name: done
// with it (answered, dropped), or to deliver it again (retry). A queued
// request is released later, by its job. An answered request's file is
// gone (answered says it was removed), which the watcher need not look
// up again: under a flood that look was one of the watcher's system calls
// for every request, on the goroutine every later request waits behind.
func (b *Broker) release(name string, o outcome) {
	switch o {
	case answered:
		b.watcher.Removed(name)
	case dropped:
		b.watcher.Done(name)
	case retry:
		b.watcher.Forget(name)
	}
}

// afterRemoval is o for a request file that was removed, and retry for
// one that could not be.
func afterRemoval(removed bool, o outcome) outcome {
	if !removed {
		return retry
	}
	return o
}

// handle takes one request file from read to answer at once, without
// waiting for its turn: shutdown's last pass over the inbox. It never
// panics: a failure to decide is a gate_error denial.
func (b *Broker) handle(ctx context.Context, name string) outcome {
	o, _, j := b.intake(ctx, name)
	if j != nil {
		j()
	}
	return o
}

// intake reads one request file, decides what it needs, and returns the
// job that does what is left (answering, escalating), with whose turn it
// takes (a requester key), or what became of the file when nothing is
// left to do. Reading, checking and deciding by the rules are cheap and
// done in arrival order; the job waits for its requester's turn (fair.go).
// A job releases the request file itself: the outcome is then queued.
func (b *Broker) intake(ctx context.Context, name string) (outcome, string, job) {
	id, data, f, o := b.readRequest(name)
	if data == nil {
		return o, "", nil
	}
	return b.intakeRead(ctx, name, id, data, f)
}

// readRequest reads the request file name: its id, bytes and who wrote
// it, or (data nil) what became of it when it cannot be served.
func (b *Broker) readRequest(name string) (id string, data []byte, f from, o outcome) {
	path := b.requestPath(name)
	id, err := mailbox.RequestIDFromName(name)
	if err != nil {
		return "", nil, f, b.reject(path, "its name is not <id>.json", err)
	}
	data, f, err = b.readRequestFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil, f, dropped
	case isUnsafe(err):
		return "", nil, f, b.reject(path, "not a plain file this broker may read", err)
	case b.Layout.Isolated() && (errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EAGAIN)):
		// Another uid's file that its owner made unreadable: mode 0000,
		// or a write lease (F_SETLEASE), which fails our non-blocking
		// open for as long as the owner takes it again. Trying again at
		// each rescan would log without end.
		return "", nil, f, b.reject(path, "its owner made it unreadable to the broker", err)
	case err != nil:
		// EACCES, EMFILE...: keep the request and try again on a rescan.
		b.log(reviewlog.ForwardingErrorEntry{Message: "Failed to read forwarded permission request", RequestPath: path, Error: err})
		b.report(err)
		return "", nil, f, retry
	}
	if data == nil {
		data = []byte{} // an empty file is read, and malformed
	}
	return id, data, f, 0
}

// readRequestFile reads a request file as the layout's mode wants it
// owned (Layout.RequestOwner: this user's in the same-uid mode, anyone's
// in the isolation mode), with who wrote it: in the isolation mode its
// owner, the requester's uid, which only the kernel could have set.
func (b *Broker) readRequestFile(path string) ([]byte, from, error) {
	data, uid, err := mailbox.ReadFileIntoOf(path, b.Layout.RequestOwner(), readBuffer)
	if !b.Layout.Isolated() {
		return data, sameUID, err
	}
	return data, from{uid: uid}, err
}

// intakeRead is intake once the file is read: data are its bytes, id the
// id its name says. It consumes data: a large file's buffer is read into
// again once it returns (releaseRead), and nothing it leaves keeps data.
func (b *Broker) intakeRead(ctx context.Context, name, id string, data []byte, f from) (outcome, string, job) {
	defer releaseRead(data)
	path := b.requestPath(name)
	b.mu.Lock()
	u, unwritten := b.unwritten[id]
	_, answeredBefore := b.answered[id]
	_, busy := b.inflight[id]
	b.mu.Unlock()
	if busy {
		// Delivered again while still in flight (rewritten in place):
		// the running handler owns it.
		return dropped, "", nil
	}

	// Slim: nothing decided here reads the child's prompt text or
	// payload, and an ask's turn reads them from the file again (reread).
	req, fieldErrs, err := wire.DecodeRequestSlim(data)
	if err != nil {
		if b.stillBeingWritten(path) {
			// A writer that does not publish whole files (not pi, not
			// courier) may still be writing: look again on the next
			// event or rescan rather than throw its request away.
			return retry, "", nil
		}
		return b.reject(path, "malformed", err), "", nil
	}
	if req.ID != id {
		return b.reject(path, fmt.Sprintf("its id %q does not match its file name", req.ID), nil), "", nil
	}
	if target, err := mailbox.NormalizeSessionID(req.TargetSessionID); err != nil || target != b.Session {
		return b.reject(path, fmt.Sprintf("it targets session %q, not this session %q", req.TargetSessionID, b.Session), nil), "", nil
	}
	for _, d := range fieldErrs {
		b.log(reviewlog.ForwardingWarningEntry{RequestID: reviewlog.Str(req.ID), Message: "dropped a malformed optional field", Error: d})
	}
	// From here on only req and digest are needed of the file: its bytes
	// (up to a megabyte) are kept by nothing that waits, and req holds no
	// message or payload.
	digest := wire.RequestDigest(data)
	key := f.key(&req)
	if unwritten && (u.digest != digest || u.uid != f.uid) {
		// Rewritten since it was decided (its writer alone may): the
		// kept decision, and the grants it records, were made on other
		// bytes, which are all the operator was shown.
		return b.reused(req, name, digest, f)
	}
	if unwritten {
		// The kept decision may record a whole-session grant again:
		// what that needs is kept (slim, not compact).
		return queued, key, b.answerJob(name, slim(req), u.d, u.digest, false, f)
	}
	if answeredBefore {
		if b.answeredWith(id, digest) {
			// The same request delivered again: never answer twice.
			return afterRemoval(b.remove(path), dropped), "", nil
		}
		return b.reused(req, name, digest, f)
	}
	if b.mayBeAnsweredOnDisk(req.ID) && b.answeredOnDisk(req, path, digest) {
		// Answered by a broker that died before it removed the request.
		return afterRemoval(b.remove(path), dropped), "", nil
	}
	if why := b.orphaned(req); why != "" {
		b.log(reviewlog.ForwardedRequesterGoneEntry{RequestID: req.ID, RequestPath: path, Reason: why})
		b.remove(path)
		return dropped, "", nil
	}

	if context.Cause(ctx) == nil {
		if d, ruled, decided := b.recordedAuthority(req, f); decided {
			// The response first: the review entry that says the rules
			// decided is written after it, off the child's wait.
			return queued, key, b.answerJob(name, compact(req), d, digest, true, ruled)
		}
		if why, first := b.fair.admit(key, b.maxPendingPerRequester(), b.maxPending()); why != "" {
			return queued, key, b.refuseJob(name, req, digest, why, first, f)
		}
	} else {
		// Shutdown's last pass: the escalation job answers for what
		// ended; it still counts until it does.
		b.fair.admit(key, 0, 0)
	}
	reqCtx := b.register(ctx, req, name)
	// The ask waits for its turn with what answering it unescalated needs
	// (compact); its turn reads the file again for the chain and the
	// terminal (escalateJob): thousands may wait, a megabyte each.
	return queued, key, b.escalateJob(&escalation{ctx: reqCtx, request: compact(req), name: name, digest: digest, key: key, from: f})
}

// reject logs a request file that cannot be served and removes it.
func (b *Broker) reject(path, why string, err error) outcome {
	b.log(reviewlog.ForwardingWarningEntry{Message: "Ignoring invalid forwarded permission request: " + why, RequestPath: path, Error: err})
	if err != nil {
		b.report(fmt.Errorf("ignoring %s: %s: %w", path, why, err))
	} else {
		b.report(fmt.Errorf("ignoring %s: %s", path, why))
	}
	b.remove(path)
	return dropped
}

// writeGrace is how long a malformed request file is given to be
// completed by a writer that writes in place.
const writeGrace = 2 * time.Second

func (b *Broker) stillBeingWritten(path string) bool {
	info, err := os.Lstat(path)
	return err == nil && b.now().Sub(info.ModTime()) < writeGrace
}

func isUnsafe(err error) bool {
	var unsafe *mailbox.UnsafeFileError
	return errors.As(err, &unsafe)
}

// answeredOnDisk reports whether responses/ already holds this broker's
// answer to exactly these request bytes: a broker that died between
// writing the response and removing the request. Anything else found
// there (an unbound, foreign or unreadable file: planted, or copied from
// another request) is not an answer; it is logged and written over, so
// it can neither stop nor replace the real answer
// (docs/decisions/0006-response-binding.md).
func (b *Broker) answeredOnDisk(req wire.Request, path, digest string) bool {
	respPath, err := b.Layout.ResponsePath(b.Session, req.ID)
	if err != nil {
		return false
	}
	data, err := mailbox.ReadFile(respPath)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	var why error
	if err == nil {
		var resp wire.Response
		if resp, _, err = wire.DecodeResponse(data); err == nil {
			if why = wire.CheckBinding(resp, req.ID, digest, true); why == nil {
				return true
			}
		}
	}
	if why == nil {
		why = err
	}
	p := parties(&req)
	b.log(reviewlog.ForwardingWarningEntry{
		Message:   "a response that does not answer this request was already there; answering over it",
		RequestID: reviewlog.Str(req.ID), Parties: &p, RequestPath: path, ResponsePath: respPath, Error: why,
	})
	b.report(fmt.Errorf("request %s: answering over %s, which does not answer it: %w", req.ID, respPath, why))
	return false
}

// orphaned says why nobody can be waiting for req any more, or "".
func (b *Broker) orphaned(req wire.Request) string {
	if req.RequesterPID > 0 && !mailbox.ProcessAlive(req.RequesterPID) {
		return "requester process " + strconv.Itoa(req.RequesterPID) + " exited"
	}
	if age := b.now().Sub(time.UnixMilli(req.CreatedAt)); age > b.forwardingTimeout() {
		return fmt.Sprintf("created %s ago, past the forwarding timeout", age.Round(time.Second))
	}
	return ""
}

// recordedAuthority is the first step of resolution (see the package
// doc): the rules and session grants, only for a request that carries the
// child-fixed facts or, with LegacyBashDisplayMatch, a bash display value
// (RecordedAuthorityOf, which broker check --request shares), for the
// requester f. ruled is f with how far the rules believed its agent name.
func (b *Broker) recordedAuthority(req wire.Request, f from) (d decision.Decision, ruled from, decided bool) {
	rd, d, decided := RecordedAuthorityOf(b.Policy, &req, b.LegacyBashDisplayMatch, f.uid)
	f.trust = rd.AgentTrust
	return d, f, decided
}
