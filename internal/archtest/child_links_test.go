package archtest

import (
	"strings"
	"testing"
)

// TestChildLinksNoNATS: the child built without tags links no NATS
// package. Linking nats.go costs every process start more than a
// millisecond, on the agent's critical path once per ask; a NATS transport
// makes child exec courier-child-nats, the same ./cmd/child built with
// -tags nats (docs/decisions/0028-child-over-nats.md).
func TestChildLinksNoNATS(t *testing.T) {
	deps := goList(t, "-deps", "./cmd/child")
	if len(deps) == 0 {
		t.Fatal("go list -deps ./cmd/child listed nothing")
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/nats-io/") {
			t.Errorf("cmd/child (no tags) links %s", dep)
		}
	}
	// The check can fail: the tagged build does link it.
	tagged := goList(t, "-tags", "nats", "-deps", "./cmd/child")
	if !containsPrefix(tagged, "github.com/nats-io/nats.go") {
		t.Error("cmd/child built with -tags nats links no github.com/nats-io/nats.go: the check above proves nothing")
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
