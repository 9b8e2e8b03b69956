package archtest

import (
	"strings"
	"testing"
)

// TestLinksNoNATS: child and broker built without tags link no NATS
// package; each execs its sibling, the same command built with -tags
// nats, for a NATS transport or flag.
//   - child: linking nats.go costs every process start more than a
//     millisecond, on the agent's critical path once per ask
//     (docs/decisions/0028-child-over-nats.md).
//   - broker: the embedded NATS server nearly doubled the binary (23.5
//     to 40.8 MB) and a fresh broker's resident memory (19.4 to 27.9
//     MiB, most of it its code), whether it served NATS or not
//     (docs/decisions/0034-broker-nats-sibling.md).
func TestLinksNoNATS(t *testing.T) {
	for _, tc := range []struct {
		cmd string
		// tagged is a package the build with -tags nats links, so that
		// the check can fail.
		tagged string
	}{
		{"./cmd/child", "github.com/nats-io/nats.go"},
		{"./cmd/broker", "github.com/nats-io/nats-server/"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			deps := goList(t, "-deps", tc.cmd)
			if len(deps) == 0 {
				t.Fatalf("go list -deps %s listed nothing", tc.cmd)
			}
			for _, dep := range deps {
				if strings.HasPrefix(dep, "github.com/nats-io/") {
					t.Errorf("%s (no tags) links %s", tc.cmd, dep)
				}
			}
			if tagged := goList(t, "-tags", "nats", "-deps", tc.cmd); !containsPrefix(tagged, tc.tagged) {
				t.Errorf("%s built with -tags nats links no %s: the check above proves nothing", tc.cmd, tc.tagged)
			}
		})
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
