package natsbridge

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/reviewlog"
)

// goneKept bounds the gone messages remembered for asks not bridged yet
// (still in the stream when their child gave up), goneKeptPerOwner those
// of one owner, and goneTTL how long each is: past the engine's duplicate
// window a request would not be delivered after its gone message anyway.
// The bound per owner makes an owner's flood of gone messages push out
// only its own.
const (
	goneKept         = 4096
	goneKeptPerOwner = 1024
	goneTTL          = 2 * time.Minute
)

// subscribeGone listens for the session's gone messages (core NATS).
func (b *Bridge) subscribeGone() (*nats.Subscription, error) {
	filter, err := natsbox.SessionGoneFilter(b.session)
	if err != nil {
		return nil, err
	}
	sub, err := b.Conn.Subscribe(filter, func(msg *nats.Msg) { b.withdraw(msg.Subject) })
	if err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", filter, err)
	}
	return sub, nil
}

// withdraw handles a gone message: the child of that ask gave up. A
// request in the inbox is removed, which serve's sweep notices and ends
// the ask as for a file child that gave up; one not bridged yet is
// remembered and refused when it comes. Only the owner of an ask can
// withdraw it: the subject says whose it is, and the engine's permissions
// let an identity publish under its own owner token only.
func (b *Bridge) withdraw(subject string) {
	kind, sessionTok, owner, idTok, err := natsbox.ParseSubject(subject)
	if want, _ := natsbox.Token(b.session); err != nil || kind != natsbox.KindGone || sessionTok != want || natsbox.CheckOwner(owner) != nil {
		return
	}
	id, err := natsbox.DecodeToken(idTok)
	if err != nil {
		return
	}
	b.mu.Lock()
	m := b.byID[id]
	if m != nil && m.Owner != owner {
		m = nil
	}
	if m == nil {
		b.rememberGone(owner, idTok)
	}
	b.mu.Unlock()
	if m == nil {
		return
	}
	path, err := b.Layout.RequestPath(b.session, m.RequestID)
	if err != nil {
		return
	}
	if err := os.Remove(path); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			b.report(fmt.Errorf("nats bridge: withdrawing %s: %w", path, err))
		}
		return
	}
	b.log(reviewlog.NATSRequestWithdrawnEntry{RequestID: m.RequestID, Owner: owner, Subject: subject})
}

// rememberGone records a gone message for an ask not bridged; b.mu held.
// Past an owner's bound one of its own entries makes room; past the bound
// of all, the expired ones, then one of this owner's, then any.
func (b *Bridge) rememberGone(owner, idTok string) {
	now := b.now()
	mine := b.gone[owner]
	if mine == nil {
		mine = map[string]time.Time{}
		b.gone[owner] = mine
	}
	if _, ok := mine[idTok]; !ok {
		if len(mine) >= goneKeptPerOwner {
			b.dropGone(owner)
		} else if b.goneN >= goneKept {
			b.expireGone(now)
			if b.goneN >= goneKept {
				b.dropGone(owner)
			}
		}
		b.goneN++
	}
	mine[idTok] = now
}

// dropGone forgets one remembered gone message, of owner if it has any;
// b.mu held.
func (b *Bridge) dropGone(owner string) {
	from := b.gone[owner]
	if len(from) == 0 {
		for _, m := range b.gone {
			if len(m) > 0 {
				from = m
				break
			}
		}
	}
	for k := range from {
		delete(from, k)
		b.goneN--
		return
	}
}

// expireGone forgets the gone messages older than goneTTL; b.mu held.
func (b *Bridge) expireGone(now time.Time) {
	for owner, m := range b.gone {
		for k, at := range m {
			if now.Sub(at) > goneTTL {
				delete(m, k)
				b.goneN--
			}
		}
		if len(m) == 0 {
			delete(b.gone, owner)
		}
	}
}

// wasGone reports, once, whether the child of owner's ask idTok said it
// gave up before its request was taken.
func (b *Bridge) wasGone(owner, idTok string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	at, ok := b.gone[owner][idTok]
	if ok {
		delete(b.gone[owner], idTok)
		b.goneN--
		if len(b.gone[owner]) == 0 {
			delete(b.gone, owner)
		}
	}
	return ok && b.now().Sub(at) <= goneTTL
}
