package audit

import (
	"bytes"
	"encoding/json"
)

// Lister turns review-log lines into listed decisions, one per ask. Feed
// it a log's lines in order with Line, then call Flush; it calls Emit for
// each decision the Filter selects, in the order the asks were first
// logged.
//
// The lines of one ask are joined by requestId and request digest, as the
// census joins them. The line listed is the first that says what was
// asked, else the first: the broker writes an auto-approved ask's entry
// after its response, so in a log it shares with its child the child's
// response_received (which does not say what was asked) often comes
// first. An ask whose lines so far do not say is held until one does, or
// until it is old: more than maxHeld asks behind it, or, for a live log,
// two calls of Age later. The lines of one ask are written within moments
// of each other, so that is enough, and memory stays bounded.
type Lister struct {
	Filter Filter
	// Emit receives each decision; an error stops the listing (Line or
	// Flush returns it).
	Emit func(Listed) error

	asks  map[string]*listedID
	order []string // ids in the order first seen, to forget the oldest
	next  int      // where order's oldest entry is, once it is full
	queue []*heldAsk
	gen   int // Age's count
}

// Bounds of a Lister's memory.
const (
	// maxRememberedIDs bounds the ids remembered to join later lines to:
	// the lines of one ask are written within its forwarding timeout, so
	// tens of thousands of asks later none of its lines is still to come.
	maxRememberedIDs = 1 << 16
	// maxHeld bounds the asks waiting to be listed.
	maxHeld = 256
)

// listedID is what a Lister remembers of a requestId: its asks, one per
// request digest ("" for an ask whose first line had none).
type listedID struct {
	asks   []*heldAsk
	latest int // the ask of the latest line with a digest
}

// heldAsk is one ask: its decision as listed so far, and whether that is
// final (it says what was asked, or it was listed).
type heldAsk struct {
	digest string
	l      Listed
	final  bool
	gen    int // the Age count when it was first seen
}

// Line reads one line of the log (without its line ending). Lines that
// are not decisions, and bad lines, are skipped.
func (ls *Lister) Line(line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || m == nil {
		return nil
	}
	event := str(m, "event")
	implied, terminal := terminalEvents[event]
	if !terminal {
		return nil
	}
	l := listed(m, event, implied)
	l.RequestID = str(m, "requestId")
	telling := l.Surface != "" || l.Value != "" || len(l.Units) > 0
	if l.RequestID == "" {
		ls.queue = append(ls.queue, &heldAsk{l: l, final: true, gen: ls.gen})
		return ls.emitReady(false)
	}
	a, isNew := ls.ask(l.RequestID, str(m, "requestSha256"))
	switch {
	case isNew:
		a.l, a.final, a.gen = l, telling, ls.gen
		ls.queue = append(ls.queue, a)
	case !a.final && telling:
		a.l, a.final = l, true
	}
	return ls.emitReady(false)
}

// ask is the ask a line of id with digest (or "") belongs to, and whether
// the line is its first: a line without a digest joins the latest ask of
// its id; a first digest joins an ask whose first line had none.
func (ls *Lister) ask(id, digest string) (a *heldAsk, isNew bool) {
	if ls.asks == nil {
		ls.asks = make(map[string]*listedID)
	}
	r := ls.asks[id]
	if r == nil {
		ls.remember(id)
		a = &heldAsk{digest: digest}
		ls.asks[id] = &listedID{asks: []*heldAsk{a}}
		return a, true
	}
	if digest == "" {
		return r.asks[r.latest], false
	}
	for i, x := range r.asks {
		if x.digest == digest {
			r.latest = i
			return x, false
		}
	}
	if len(r.asks) == 1 && r.asks[0].digest == "" {
		r.asks[0].digest = digest
		return r.asks[0], false
	}
	a = &heldAsk{digest: digest}
	r.asks = append(r.asks, a)
	r.latest = len(r.asks) - 1
	return a, true
}

// remember notes id as seen, forgetting the oldest past maxRememberedIDs.
func (ls *Lister) remember(id string) {
	if len(ls.order) < maxRememberedIDs {
		ls.order = append(ls.order, id)
		return
	}
	delete(ls.asks, ls.order[ls.next])
	ls.order[ls.next] = id
	ls.next = (ls.next + 1) % maxRememberedIDs
}

// emitReady lists the asks at the head of the queue that are final, or
// old (all of them when force), in order.
func (ls *Lister) emitReady(force bool) error {
	for len(ls.queue) > 0 {
		a := ls.queue[0]
		if !a.final && !force && len(ls.queue) <= maxHeld && a.gen >= ls.gen-1 {
			return nil
		}
		ls.queue[0] = nil
		ls.queue = ls.queue[1:]
		a.final = true
		if ls.Filter.Match(a.l) && ls.Emit != nil {
			if err := ls.Emit(a.l); err != nil {
				return err
			}
		}
	}
	ls.queue = nil // let the backing array go once drained
	return nil
}

// Age tells the Lister that time has passed (a live log, Follow): an ask
// held since before the previous Age is listed as its lines say it.
func (ls *Lister) Age() error {
	ls.gen++
	return ls.emitReady(false)
}

// Flush lists every ask held: the input has ended.
func (ls *Lister) Flush() error {
	return ls.emitReady(true)
}
