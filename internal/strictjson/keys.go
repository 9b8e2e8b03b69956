package strictjson

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The duplicate-key half of Check: a key is compared with the earlier keys
// of its object as encoding/json would match them, under Unicode simple
// folding.

// key reads the key at c.pos of the object open at depth, refuses it if it
// folds equal to an earlier key of that object, and returns keys with it
// added. Like Decoder.Token, it judges the key before looking for the
// colon after it.
func (c *checker) key(keys []keyRef, depth int) ([]keyRef, error) {
	start := c.pos + 1
	escaped, high, err := c.str()
	if err != nil {
		return keys, err
	}
	k := keyRef{start: start, end: c.pos - 1, simple: !escaped && !high}
	raw := c.data[k.start:k.end]

	base := c.bases[depth]
	if base < 0 {
		return keys, c.bigKey(c.big[len(c.big)-1], raw)
	}
	if k.simple {
		k.hash = hashSimple(raw)
	} else {
		k.hash = hashFolded(raw)
	}
	for _, prev := range keys[base:] {
		if prev.hash == k.hash && c.sameKey(prev, k) {
			return keys, duplicate(decodeKey(raw), decodeKey(c.data[prev.start:prev.end]))
		}
	}
	keys = append(keys, k)
	if len(keys)-base > maxLinearKeys {
		// Too many to compare pairwise: move this object's keys to a map.
		seen := make(map[string]string, 2*maxLinearKeys)
		for _, prev := range keys[base:] {
			s := decodeKey(c.data[prev.start:prev.end])
			seen[FoldKey(s)] = s
		}
		keys = keys[:base]
		c.bases[depth] = -1
		c.big = append(c.big, seen)
	}
	return keys, nil
}

func (c *checker) bigKey(seen map[string]string, raw []byte) error {
	s := decodeKey(raw)
	folded := FoldKey(s)
	if prev, dup := seen[folded]; dup {
		return duplicate(s, prev)
	}
	seen[folded] = s
	return nil
}

// closeObject forgets the keys of the object that was open at depth.
func (c *checker) closeObject(keys []keyRef, depth int) []keyRef {
	if base := c.bases[depth]; base >= 0 {
		return keys[:base]
	}
	c.big[len(c.big)-1] = nil
	c.big = c.big[:len(c.big)-1]
	return keys
}

// sameKey reports whether two keys with equal hashes fold equal.
func (c *checker) sameKey(a, b keyRef) bool {
	x, y := c.data[a.start:a.end], c.data[b.start:b.end]
	if a.simple && b.simple {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if upperASCII(x[i]) != upperASCII(y[i]) {
				return false
			}
		}
		return true
	}
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		var r1, r2 rune
		r1, i = nextRune(x, i)
		r2, j = nextRune(y, j)
		if foldRune(r1) != foldRune(r2) {
			return false
		}
	}
	return i == len(x) && j == len(y)
}

// FNV-1a over folded runes; hashSimple and hashFolded agree on every key
// both can read.
const (
	hashOffset = 2166136261
	hashPrime  = 16777619
)

func hashSimple(raw []byte) uint32 {
	h := uint32(hashOffset)
	for _, ch := range raw {
		h = (h ^ uint32(upperASCII(ch))) * hashPrime
	}
	return h
}

func hashFolded(raw []byte) uint32 {
	h := uint32(hashOffset)
	for i := 0; i < len(raw); {
		var r rune
		r, i = nextRune(raw, i)
		h = (h ^ uint32(foldRune(r))) * hashPrime
	}
	return h
}

func upperASCII(ch byte) byte {
	if 'a' <= ch && ch <= 'z' {
		return ch - ('a' - 'A')
	}
	return ch
}

// foldRune maps r to the smallest rune of its simple-fold orbit, as FoldKey
// does rune by rune.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		return rune(upperASCII(byte(r)))
	}
	low := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < low {
			low = f
		}
	}
	return low
}

// FoldKey maps every rune to the smallest rune of its Unicode simple-fold
// orbit, so two keys fold equal exactly when strings.EqualFold (and
// encoding/json's key matching) treats them as equal.
func FoldKey(s string) string {
	simple := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf || ('a' <= s[i] && s[i] <= 'z') {
			simple = false
			break
		}
	}
	if simple {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}
