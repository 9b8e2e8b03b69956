package natsbridge

import (
	"runtime"
	"strings"
	"testing"
)

// A broker takes over only a lease held as exactly its own description
// with another pid or the same (a container's broker is pid 1 on every
// restart); a live broker of another host or root keeps its lease, also
// one whose root path ends like this broker's description, and one whose
// root is another directory at the same path (dirIdentity). Seen failing
// with the earlier suffix match: the crafted root was taken over and the
// same pid was not.
func TestLeaseHolderTakesOverOnlyItsEarlierRun(t *testing.T) {
	self, earlier := holderOf(1, "h", "/r")
	if self != "broker pid 1 on h, root /r" {
		t.Fatalf("holder %q", self)
	}
	root := t.TempDir()
	id := dirIdentity(root)
	if runtime.GOOS != "windows" && !strings.HasPrefix(id, " (dir ") {
		t.Errorf("dirIdentity(%s) = %q", root, id)
	}
	// Holder describes the root with its identity.
	if desc, _ := Holder(1, "h", root); desc != "broker pid 1 on h, root "+root+id {
		t.Errorf("Holder(1, h, %s) = %q, want the root's identity %q after its path", root, desc, id)
	}
	// Another volume mounted at the same path, in a container that
	// shares the host's name.
	if _, mine := holderOf(2, "h", "/r (dir 1:3)"); mine("broker pid 1 on h, root /r (dir 1:2)") {
		t.Error("a lease of another directory at the same path was taken over")
	}
	for _, c := range []struct {
		holder string
		want   bool
	}{
		{"broker pid 4242 on h, root /r", true},
		{"broker pid 1 on h, root /r", true},
		{"broker pid 4242 on g, root /r", false},
		{"broker pid 4242 on h, root /r2", false},
		{"broker pid 4242 on h, root /r (dir 1:2)", false},
		{"broker pid 7 on g, root /q on h, root /r", false},
		{"broker pid x on h, root /r", false},
		{"broker pid  on h, root /r", false},
		{"broker pid 007 on h, root /r", false},
		{"test on h, root /r", false},
		{"", false},
	} {
		if got := earlier(c.holder); got != c.want {
			t.Errorf("earlier run %q: %v, want %v", c.holder, got, c.want)
		}
	}
}
