package intent

import "strconv"

// tree holds the entries of a transcript that links its entries by id and
// parent (pi's session file, Claude Code's transcript): a file that keeps
// every branch the user ever took, where the conversation is the path
// from the newest entry back to the root. Reading it in file order would
// let the words of a branch the user abandoned ("go ahead, force push",
// then rewound) stand as intent; walking the path does not.
//
// It is bounded: at most maxNodes entries and maxText bytes of admitted
// text, the oldest in file order forgotten first. A walk that reaches a
// forgotten entry stops there.
type tree struct {
	byID  map[string]*node
	order []*node // file order; order[head:] are the entries kept
	head  int
	last  *node // the newest entry: the leaf the conversation ends at
	text  int   // bytes of admitted text held
	seq   int   // entries seen, for the ids of entries without one
	gen   int   // the current walk, to stop on a cycle
	// gap is set when a line was skipped (too long, not JSON) since the
	// last entry: the next entry may be the child of the entry skipped.
	gap bool

	maxNodes, maxText int
}

// nodeKind says what an entry does to the path beyond its own text.
type nodeKind uint8

const (
	plainNode nodeKind = iota
	// piCompaction: pi's compaction entry. The conversation before it is
	// its summary, then the entries from firstKept up to it.
	piCompaction
	// claudeBoundary: Claude Code's compact_boundary, a new root. The
	// entries of its preserved segment (tail back to head) follow the
	// summary entry anchored on it.
	claudeBoundary
)

type node struct {
	id, parent string
	kind       nodeKind
	items      []Item
	// prev is the entry before this one in file order; gapBefore says a
	// line was skipped between them.
	prev      *node
	gapBefore bool
	// piCompaction: its summary and the first entry it kept.
	summary   *Item
	firstKept string
	// claudeBoundary: the preserved segment and the entry it follows.
	anchor, segHead, segTail string
	seen                     int
}

func newTree(maxNodes, maxText int) *tree {
	return &tree{byID: make(map[string]*node), maxNodes: maxNodes, maxText: maxText}
}

// skipped records a line that could not be read.
func (t *tree) skipped() { t.gap = true }

// add appends an entry. An entry without an id (pi's version 1 files) is
// given one and the previous entry as its parent: those files were linear.
func (t *tree) add(n *node) {
	t.seq++
	if n.id == "" {
		n.id = "#" + strconv.Itoa(t.seq)
		if t.last != nil {
			n.parent = t.last.id
		}
	}
	if old, dup := t.byID[n.id]; dup {
		// A second entry with an id already seen: the file is not what
		// its writer writes. The newer one wins the id; the older stays
		// in file order, unreachable by id.
		old.id = ""
	}
	n.prev, n.gapBefore = t.last, t.gap
	t.gap = false
	t.byID[n.id] = n
	t.order = append(t.order, n)
	t.last = n
	t.text += n.size()
	for len(t.order)-t.head > t.maxNodes || (t.text > t.maxText && len(t.order)-t.head > 1) {
		t.evict()
	}
}

func (n *node) size() int {
	s := 0
	for _, it := range n.items {
		s += len(it.Text)
	}
	if n.summary != nil {
		s += len(n.summary.Text)
	}
	return s
}

// evict forgets the oldest entry.
func (t *tree) evict() {
	old := t.order[t.head]
	t.order[t.head] = nil
	t.head++
	if old.id != "" && t.byID[old.id] == old {
		delete(t.byID, old.id)
	}
	t.text -= old.size()
	if t.head < len(t.order) {
		t.order[t.head].prev = nil
	}
	if t.head > 1024 && t.head*2 > len(t.order) {
		t.order = append([]*node(nil), t.order[t.head:]...)
		t.head = 0
	}
}

// parentOf returns the entry n continues: its parent, or nil at a root.
// A parent never seen, where a line was skipped just before n, is taken
// to be that line (a tool result or a pasted image over the line limit),
// and the path goes on from the entry before it; a parent forgotten or
// never written ends the path.
func (t *tree) parentOf(n *node) *node {
	if n.parent == "" {
		return nil
	}
	if p, ok := t.byID[n.parent]; ok {
		return p
	}
	if n.gapBefore {
		return n.prev
	}
	return nil
}

// conversation walks from the newest entry back to the root and returns
// the text on the path, newest first, stopping once it holds budget bytes.
func (t *tree) conversation(budget int) []Item {
	t.gen++
	var rev []Item
	size := 0
	add := func(its []Item) {
		for i := len(its) - 1; i >= 0; i-- {
			rev = append(rev, its[i])
			size += len(its[i].Text)
		}
	}
	for n := t.last; n != nil && size < budget; {
		if n.seen == t.gen {
			break // a cycle of parents: the file is not what its writer writes
		}
		n.seen = t.gen
		if n.kind == piCompaction {
			add(t.kept(n))
			if n.summary != nil {
				add([]Item{*n.summary})
			}
			break // nothing before a compaction is in the conversation
		}
		p := t.parentOf(n)
		if p != nil && p.kind == claudeBoundary && (p.anchor == "" || p.anchor == n.id) {
			add(t.preserved(p))
		}
		add(n.items)
		n = p
	}
	return rev
}

// kept returns the items of the entries pi's compaction c kept (from its
// firstKept entry up to c), oldest first; none when firstKept is not on
// the path, as pi then keeps none. Compaction entries among them add no
// text: c's summary covers theirs.
func (t *tree) kept(c *node) []Item {
	if c.firstKept == "" {
		return nil
	}
	var path []*node
	for n := t.parentOf(c); n != nil && n.seen != t.gen; n = t.parentOf(n) {
		n.seen = t.gen
		path = append(path, n)
		if n.id == c.firstKept {
			var out []Item
			for i := len(path) - 1; i >= 0; i-- {
				if path[i].kind == plainNode {
					out = append(out, path[i].items...)
				}
			}
			return out
		}
	}
	return nil
}

// preserved returns the items of the segment Claude Code's boundary b
// kept verbatim, oldest first: the entries from its tail back to its head
// (none when the head is not found on the way: the segment is not what
// the boundary says).
func (t *tree) preserved(b *node) []Item {
	if b.segTail == "" {
		return nil
	}
	var path []*node
	found := false
	for n := t.byID[b.segTail]; n != nil && n.seen != t.gen; n = t.parentOf(n) {
		n.seen = t.gen
		path = append(path, n)
		if n.id == b.segHead || b.segHead == "" {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	var out []Item
	for i := len(path) - 1; i >= 0; i-- {
		out = append(out, path[i].items...)
	}
	return out
}
