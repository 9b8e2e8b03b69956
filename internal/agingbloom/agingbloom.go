// Package agingbloom is a set of strings in fixed memory that may answer
// "perhaps" for a string never added (a Bloom filter), never "no" for one
// added within its window, and forgets what was added long enough ago.
//
// The broker keeps in it the ids it stopped remembering early under a
// flood: a request whose id is not in the set was surely not answered
// and then forgotten early within the window, and needs no look on disk
// for an answer of this run's.
package agingbloom

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"time"
)

// hashes is how many bits each string sets: with a quarter of each
// generation's bits set, about 1 look in 130 at a string never added says
// "perhaps" (2 × 0.25⁴).
const hashes = 4

// Filter is the set. Its zero value is not usable; see New. It is safe
// for concurrent use.
//
// It keeps two generations of bits, each a window long. Strings are
// added to the current one; once its window has passed it becomes the
// previous one and the one before is cleared. A string added at t is
// thus in one of the two until at least t + window, and gone from the
// first Add or MayContain at or after t + 2×window.
type Filter struct {
	mask   uint64
	window time.Duration
	seed   maphash.Seed

	mu    sync.Mutex
	start time.Time // when cur began; zero before the first Add
	cur   []uint64  // nil until the first Add: a filter never used costs nothing
	prev  []uint64
}

// New is a filter of about size bits a generation (rounded up to a power
// of two, at least 64) whose strings are kept for at least window. Its
// memory, two generations, is taken at the first Add.
func New(size int, window time.Duration) *Filter {
	n := uint64(64)
	if size > 64 {
		n = 1 << bits.Len64(uint64(size-1))
	}
	return &Filter{mask: n - 1, window: window, seed: maphash.MakeSeed()}
}

// Add puts s in the set at now.
func (f *Filter) Add(s string, now time.Time) {
	h1, h2 := f.hash(s)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur == nil {
		words := (f.mask + 1) / 64
		f.cur, f.prev = make([]uint64, words), make([]uint64, words)
		f.start = now
	}
	f.age(now)
	for i := range uint64(hashes) {
		b := (h1 + i*h2) & f.mask
		f.cur[b/64] |= 1 << (b % 64)
	}
}

// MayContain says whether s may have been added within the window before
// now: false only if it surely was not.
func (f *Filter) MayContain(s string, now time.Time) bool {
	h1, h2 := f.hash(s)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur == nil {
		return false
	}
	f.age(now)
	return has(f.cur, h1, h2, f.mask) || has(f.prev, h1, h2, f.mask)
}

// age starts a new generation once the current one's window has passed.
// The generations keep to their windows (start moves a window at a
// time), so that a late turn does not keep the previous one longer.
// f.mu is held.
func (f *Filter) age(now time.Time) {
	switch since := now.Sub(f.start); {
	case since >= 2*f.window:
		// Both generations' windows have passed.
		clear(f.cur)
		clear(f.prev)
		f.start = now
	case since >= f.window:
		f.cur, f.prev = f.prev, f.cur
		clear(f.cur)
		f.start = f.start.Add(f.window)
	}
}

// hash is s's hash and a step from it: bit i of s is h1 + i×h2 (double
// hashing); h2 is odd so that a string's bits differ.
func (f *Filter) hash(s string) (h1, h2 uint64) {
	h := maphash.String(f.seed, s)
	return h, h>>32 | 1
}

func has(gen []uint64, h1, h2, mask uint64) bool {
	for i := range uint64(hashes) {
		b := (h1 + i*h2) & mask
		if gen[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}
