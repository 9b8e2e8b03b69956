package rules

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// The "did you mean" of an unknown key: a key courier reads that differs
// from it only in letter case, or by at most two edits (a letter added,
// dropped, changed, or two swapped). Cheap, since the lists are short,
// and it turns "unknown key" into the fix.

// maxSuggestDistance is how many edits a suggestion may be away from the
// key written.
const maxSuggestDistance = 2

// didYouMean returns `did you mean "<name>"?` (with a word about letter
// case when only that differs) for the name of names closest to key, or ""
// when none is close.
func didYouMean(key string, names []string) string {
	name := suggestKey(key, names)
	switch {
	case name == "":
		return ""
	case strings.EqualFold(name, key):
		return fmt.Sprintf("keys are case-sensitive, did you mean %q?", name)
	}
	return fmt.Sprintf("did you mean %q?", name)
}

// suggestKey returns the name of names closest to key, or "". A name
// equal but for letter case wins; otherwise the nearest within
// maxSuggestDistance edits (the first of equals), counted on the
// lower-cased strings, and never for keys so short that two edits make
// them anything.
func suggestKey(key string, names []string) string {
	for _, n := range names {
		if strings.EqualFold(n, key) {
			return n
		}
	}
	if utf8.RuneCountInString(key) <= maxSuggestDistance+1 {
		return ""
	}
	best, bestDist := "", maxSuggestDistance+1
	for _, n := range names {
		if d := editDistance(strings.ToLower(key), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b,
// in runes: insertions, deletions, substitutions and swaps of two
// neighbours each cost one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows: the one before the previous (for swaps), the previous,
	// and the current.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
