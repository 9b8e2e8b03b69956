package plugins

import (
	"slices"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/chain"
	"github.com/seed6639df8c/courier/plugins/confine"
	"github.com/seed6639df8c/courier/rules"
)

// BenchmarkAuthorizeRoundTrip measures one plugin-resolved ask: the
// supervisor's call into a real plugin process (gRPC over a unix socket
// with mutual TLS) and back, and the same through Chain.Resolve (evidence
// projection, envelope, decision; no review log). It reports p50 and p99.
func BenchmarkAuthorizeRoundTrip(b *testing.B) {
	members, errs := loadMembers(b.Context(), []rules.AuthorizerLink{spec("bench")}, nil, Options{})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	c := chain.New(nil, members)
	b.Cleanup(func() { c.Close() })
	link := members[0].Link
	ev := authorizer.Project(request("bash", "allow"), authorizer.Disclosure{})

	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	b.Run("supervisor", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if v, err := link.Authorize(b.Context(), ev); err != nil || v.Kind != authorizer.Allow {
				b.Fatal(v, err)
			}
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	b.Run("chain", func(b *testing.B) {
		req := request("bash", "allow")
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if d, ok := c.Resolve(b.Context(), req); !ok || !d.Approved() {
				b.Fatal(d, ok)
			}
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
}

// BenchmarkPluginStart measures one plugin start as the supervisor does
// it (verify and hash the binary, start, go-plugin's handshake with
// mutual TLS, Describe) and its stop, unconfined and confined as this
// machine allows (the init, its PID and network namespaces, Landlock),
// and confined with "network" declared (no network namespace). It
// reports p50 and p99 of the start alone.
func BenchmarkPluginStart(b *testing.B) {
	for _, bc := range []struct {
		name    string
		plan    *confine.Plan
		network bool
	}{{"unconfined", nil, false}, {"confined", testPlan, false}, {"confined-network", testPlan, true}} {
		b.Run(bc.name, func(b *testing.B) {
			s := spec("bench")
			s.Network = bc.network
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				link := newSupervised(s, Options{Confinement: bc.plan})
				start := time.Now()
				if _, err := link.acquire(b.Context()); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				link.Close()
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
