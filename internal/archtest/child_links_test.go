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

// TestBrokerLinksNoNATS: the broker built without tags links no NATS
// package. The embedded NATS server nearly doubled the broker binary
// (23.5 to 40.8 MB) and a fresh broker's resident memory (19.4 to 27.9
// MiB, most of it its code), whether it served NATS or not; any NATS flag
// makes broker exec courier-broker-nats, the same ./cmd/broker built with
// -tags nats (docs/decisions/0034-broker-nats-sibling.md).
func TestBrokerLinksNoNATS(t *testing.T) {
	deps := goList(t, "-deps", "./cmd/broker")
	if len(deps) == 0 {
		t.Fatal("go list -deps ./cmd/broker listed nothing")
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/nats-io/") {
			t.Errorf("cmd/broker (no tags) links %s", dep)
		}
	}
	tagged := goList(t, "-tags", "nats", "-deps", "./cmd/broker")
	if !containsPrefix(tagged, "github.com/nats-io/nats-server/") {
		t.Error("cmd/broker built with -tags nats links no github.com/nats-io/nats-server: the check above proves nothing")
	}
}
