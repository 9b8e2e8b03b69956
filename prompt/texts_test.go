package prompt

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// A flood whose every ask carries a text of its own (a cwd, an agent name)
// cannot grow the shared table past its bound, and sharing never changes
// a text: what is shown is what was asked.
func TestSharedTextsStayBounded(t *testing.T) {
	var tx texts
	for i := range 3 * maxTexts {
		s := fmt.Sprintf("/srv/flood/%d", i)
		if got := tx.share(s); got != s {
			t.Fatalf("share(%q) = %q", s, got)
		}
		if n := len(tx.m); n > maxTexts {
			t.Fatalf("after %d texts the table holds %d, more than %d", i+1, n, maxTexts)
		}
	}
	long := strings.Repeat("x", maxText+1)
	tx.share(long)
	if _, kept := tx.m[long]; kept {
		t.Errorf("a text of %d bytes was kept, past maxText %d", len(long), maxText)
	}
	// A repeated text is the table's one copy.
	a, b := tx.share(strings.Clone("session child-7")), tx.share(strings.Clone("session child-7"))
	if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
		t.Errorf("a repeated text is not the table's one copy: %q, %q", a, b)
	}
}
