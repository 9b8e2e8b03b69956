package prompt

// The prompt's queue gives every requester its own place: a flood of
// asks from one subagent never keeps another's ask from the operator.
// Each requester (its session; see requesterOf) has a list of its asks in
// arrival order, and the requesters take turns: a turn is one ask on
// screen, and when it leaves, its requester goes behind every other
// requester with asks waiting, those that arrived during the turn
// included. So an ask from a requester with nothing else waiting is shown
// next but for the requesters already ahead of it, whatever the length
// of the others' lists. Every step is O(1) but denying all of one
// requester's asks, which is O(its asks). docs/decisions/0013-prompt-fairness.md.

// requester is one requesting session's place in the queue.
type requester struct {
	key string
	// label names it on screen ("session child-7"), clean.
	label string
	// first and last end its waiting asks, in arrival order.
	first, last *entry
	waiting     int
	// prev and next link the ring of requesters that have asks waiting
	// or the ask on screen, in turn order.
	prev, next *requester
}

// queue holds the asks waiting behind the one on screen.
type queue struct {
	byKey map[string]*requester
	// head and tail end the ring. While an ask is on screen, its
	// requester is the head.
	head, tail *requester
	// waiting counts the asks waiting, sessions the requesters with at
	// least one waiting.
	waiting, sessions int
	// seq numbers the asks in arrival order.
	seq uint64
}

// add queues e behind the asks of its requester.
func (q *queue) add(e *entry) {
	if q.byKey == nil {
		q.byKey = map[string]*requester{}
	}
	r := q.byKey[e.from.key]
	if r == nil {
		r = &requester{key: e.from.key, label: e.from.label}
		q.byKey[r.key] = r
		q.ring(r)
	}
	q.seq++
	e.seq, e.owner = q.seq, r
	e.prev, e.next = r.last, nil
	if r.last != nil {
		r.last.next = e
	} else {
		r.first = e
	}
	r.last = e
	q.count(r, +1)
}

// count changes the waiting counts of r by d.
func (q *queue) count(r *requester, d int) {
	if r.waiting == 0 && d > 0 {
		q.sessions++
	}
	r.waiting += d
	q.waiting += d
	if r.waiting == 0 && d < 0 {
		q.sessions--
	}
}

// remove takes a waiting e out of the queue. Its requester leaves the
// ring when nothing of it is left, unless it is the one on screen (onScreen).
func (q *queue) remove(e *entry, onScreen *requester) {
	r := e.owner
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		r.first = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		r.last = e.prev
	}
	e.prev, e.next = nil, nil
	q.count(r, -1)
	if r.waiting == 0 && r != onScreen {
		q.forget(r)
	}
}

// next ends the turn of the requester whose ask just left the screen
// (done; nil when none was on screen) and takes the ask to show next, nil
// when none waits.
func (q *queue) next(done *requester) *entry {
	if done != nil {
		if done.waiting > 0 {
			q.unring(done)
			q.ring(done)
		} else {
			q.forget(done)
		}
	}
	r := q.head
	if r == nil {
		return nil
	}
	e := r.first
	q.remove(e, r)
	return e
}

// ring puts r at the end of the turn order.
func (q *queue) ring(r *requester) {
	r.prev, r.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = r
	} else {
		q.head = r
	}
	q.tail = r
}

// unring takes r out of the turn order.
func (q *queue) unring(r *requester) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		q.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		q.tail = r.prev
	}
	r.prev, r.next = nil, nil
}

// forget drops r, which has nothing left in the queue.
func (q *queue) forget(r *requester) {
	q.unring(r)
	delete(q.byKey, r.key)
}

// drain empties the queue and returns what it held, requester by
// requester.
func (q *queue) drain() []*entry {
	out := make([]*entry, 0, q.waiting)
	for r := q.head; r != nil; r = r.next {
		for e := r.first; e != nil; e = e.next {
			out = append(out, e)
		}
	}
	for _, e := range out {
		e.prev, e.next = nil, nil
	}
	*q = queue{seq: q.seq}
	return out
}

// waitingUpTo counts r's waiting asks that arrived up to seq.
func (q *queue) waitingUpTo(r *requester, seq uint64) int {
	n := 0
	for e := r.first; e != nil && e.seq <= seq; e = e.next {
		n++
	}
	return n
}

// takeUpTo takes r's waiting asks that arrived up to seq out of the
// queue, in order; r stays while its ask is on screen (onScreen).
func (q *queue) takeUpTo(r *requester, seq uint64, onScreen *requester) []*entry {
	var out []*entry
	for r.first != nil && r.first.seq <= seq {
		e := r.first
		q.remove(e, onScreen)
		out = append(out, e)
	}
	return out
}

// inTurn returns up to n waiting asks in the order they would be shown,
// after the first skip of them: the requesters take their turns in the
// ring's order from the one after the ask on screen (whose requester,
// onScreen, comes last in each round), one ask each per round. It costs
// O(skip + n + the requesters).
func (q *queue) inTurn(onScreen *requester, skip, n int) []*entry {
	var cursors []*entry
	for r := q.head; r != nil; r = r.next {
		if r != onScreen && r.first != nil {
			cursors = append(cursors, r.first)
		}
	}
	if onScreen != nil && onScreen.first != nil {
		cursors = append(cursors, onScreen.first)
	}
	out := make([]*entry, 0, min(n, q.waiting))
	pos := 0
	for len(cursors) > 0 && len(out) < n {
		next := cursors[:0]
		if pos+len(cursors) <= skip {
			// The whole round is skipped.
			pos += len(cursors)
			for _, e := range cursors {
				if e.next != nil {
					next = append(next, e.next)
				}
			}
			cursors = next
			continue
		}
		for _, e := range cursors {
			if pos >= skip && len(out) < n {
				out = append(out, e)
			}
			pos++
			if e.next != nil {
				next = append(next, e.next)
			}
		}
		cursors = next
	}
	return out
}

// pick takes the waiting e out of the queue to be shown in place of cur,
// the ask on screen, which goes back to the front of its requester's
// asks. e's requester takes the turn (the head of the ring) and cur's
// comes right after it, so cur is shown again once e leaves; picking an
// ask of cur's own requester spends that requester's turn.
func (q *queue) pick(e, cur *entry) {
	r, o := e.owner, cur.owner
	q.remove(e, r)
	cur.prev, cur.next = nil, o.first
	if o.first != nil {
		o.first.prev = cur
	} else {
		o.last = cur
	}
	o.first = cur
	q.count(o, +1)
	if r != o {
		q.unring(r)
		r.prev, r.next = nil, q.head
		if q.head != nil {
			q.head.prev = r
		} else {
			q.tail = r
		}
		q.head = r
	}
}
