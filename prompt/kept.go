package prompt

import (
	"bytes"
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/seed6639df8c/courier/bashunits"
)

// What the prompt keeps of the long texts of a held ask, in bytes. The
// value gets the most, as much as the broker's bash parser reads
// (bashunits.MaxLen); a child's message and evidence are context and keep
// their head and tail. A held ask costs the prompt no more than these
// (docs/decisions/0013-prompt-fairness.md).
const (
	keepValueHead    = bashunits.MaxLen - keepValueTail
	keepValueTail    = 4 << 10
	keepContextHead  = 2 << 10
	keepContextTail  = 2 << 10
	keepTargetLength = bashunits.MaxLen
)

// kept is an untrusted text as the prompt keeps it: raw (cleaned only
// when drawn), whole up to a bound, else its head and its tail and how
// many characters between them were not kept. Its strings are copies that
// share no memory with the request, so a held ask does not pin the
// broker's copy (or its payload) in memory.
type kept struct {
	head, tail string
	// dropped is how many characters between head and tail were not kept;
	// 0 means head is the whole text.
	dropped int
	// runes is the length of the whole text, in characters.
	runes int
}

// keep keeps s whole when it is at most head+tail bytes long, else its
// first head and last tail bytes (on character boundaries).
func keep(s string, head, tail int) kept {
	k := kept{runes: runeCount(s)}
	if len(s) <= head+tail {
		k.head = strings.Clone(s)
		return k
	}
	h := head
	for h > 0 && !utf8.RuneStart(s[h]) {
		h--
	}
	t := len(s) - tail
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	k.head, k.tail = strings.Clone(s[:h]), strings.Clone(s[t:])
	k.dropped = runeCount(s[h:t])
	return k
}

// keepPieces is keep for a text given as the pieces it is made of, which
// it reads without joining them: only what it keeps is copied.
func keepPieces(pieces [][]byte, head, tail int) kept {
	total := 0
	for _, p := range pieces {
		total += len(p)
	}
	if total <= head+tail {
		return keep(string(bytes.Join(pieces, nil)), head, tail)
	}
	// The bytes from offset from to to of the whole text.
	span := func(from, to int) []byte {
		var out []byte
		at := 0
		for _, p := range pieces {
			lo, hi := max(from-at, 0), min(to-at, len(p))
			if lo < hi {
				out = append(out, p[lo:hi]...)
			}
			at += len(p)
		}
		return out
	}
	// The pieces are whole JSON strings and separators: valid UTF-8, no
	// character across two of them.
	at := func(i int) byte {
		for _, p := range pieces {
			if i < len(p) {
				return p[i]
			}
			i -= len(p)
		}
		return 0
	}
	hi, lo := head, total-tail
	for hi > 0 && !utf8.RuneStart(at(hi)) {
		hi--
	}
	for lo < total && !utf8.RuneStart(at(lo)) {
		lo++
	}
	h, t := span(0, hi), span(lo, total)
	runes := 0
	for _, p := range pieces {
		runes += runeCount(p)
	}
	return kept{
		head: string(h), tail: string(t), runes: runes,
		dropped: max(runes-runeCount(h)-runeCount(t), 0),
	}
}

// runeCount counts the characters of valid UTF-8 text: its bytes less its
// continuation bytes (10xxxxxx), eight at a time. A held ask's payload
// may be a megabyte, and utf8.RuneCount, which also checks the encoding,
// reads it a byte at a time.
func runeCount[T string | []byte](p T) int {
	const high = 0x8080808080808080
	cont := 0
	i := 0
	for ; i+8 <= len(p); i += 8 {
		_ = p[i+7] // one bounds check for the eight loads
		w := uint64(p[i]) | uint64(p[i+1])<<8 | uint64(p[i+2])<<16 | uint64(p[i+3])<<24 |
			uint64(p[i+4])<<32 | uint64(p[i+5])<<40 | uint64(p[i+6])<<48 | uint64(p[i+7])<<56
		// A continuation byte has bit 7 set and bit 6 clear; shifting
		// left by one brings each byte's bit 6 under its bit 7.
		cont += bits.OnesCount64(w &^ (w << 1) & high)
	}
	for ; i < len(p); i++ {
		if p[i]&0xc0 == 0x80 {
			cont++
		}
	}
	return len(p) - cont
}

func (k kept) empty() bool { return k.head == "" && k.dropped == 0 }

// cut reports whether the prompt dropped part of the text.
func (k kept) cut() bool { return k.dropped > 0 }

// droppedMarker says where, and how much, of a text the prompt did not
// keep.
func (k kept) droppedMarker() string {
	return marker(fmt.Sprintf("%d characters not kept by the prompt", k.dropped))
}

// line is the kept text cleaned as one line: blank runs, line breaks
// included, become markers, and a marker stands where the prompt dropped
// characters.
func (k kept) line() string {
	if !k.cut() {
		return Clean(k.head, 0)
	}
	return Clean(k.head, 0) + k.droppedMarker() + Clean(k.tail, 0)
}

// block is the kept text cleaned as lines (see cleanBlock), with a marker
// line where the prompt dropped characters.
func (k kept) block() []string {
	if !k.cut() {
		return cleanBlock(k.head)
	}
	out := cleanBlock(k.head)
	out = append(out, k.droppedMarker())
	return append(out, cleanBlock(k.tail)...)
}

// headTail wraps an already clean text to width columns and, when it needs
// more than maxLines lines, keeps its head and its tail with a marker line
// between them saying how much is not shown and how to see it: the end of
// a command is where a hostile child would hide what it runs. maxLines
// below 3 still shows a head, the marker and a tail line.
func headTail(s string, width, maxLines int, whole string) []string {
	lines := wrapText(s, width, 0, "")
	if maxLines <= 0 || len(lines) <= maxLines {
		return lines
	}
	maxLines = max(maxLines, 3)
	tailN := max((maxLines-1)/3, 1)
	headN := maxLines - 1 - tailN
	hidden := lines[headN : len(lines)-tailN]
	chars := 0
	for _, l := range hidden {
		chars += utf8.RuneCountInString(l)
	}
	note := marker(fmt.Sprintf("%d more lines (%d characters) · v shows %s", len(hidden), chars, whole))
	out := append([]string(nil), lines[:headN]...)
	out = append(out, cut(note, width))
	return append(out, lines[len(lines)-tailN:]...)
}
