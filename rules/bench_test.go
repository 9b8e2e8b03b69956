package rules

import (
	"fmt"
	"testing"
)

func benchPolicy(b *testing.B, sessionGrants int) *Policy {
	b.Helper()
	cfg, err := Load("")
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewPolicy(cfg, Options{Home: testHome, Protected: []string{mailboxRoot, agentDir}})
	if err != nil {
		b.Fatal(err)
	}
	for i := range sessionGrants {
		if _, err := p.Sessions().Record(WidthProven, SessionGrant{Surface: "bash", Pattern: fmt.Sprintf("tool-%d *", i)}); err != nil {
			b.Fatal(err)
		}
	}
	return p
}

// BenchmarkResolve measures the serving-side answer on the embedded
// default config (30 rules) behind the self-approval guard.
func BenchmarkResolve(b *testing.B) {
	queries := []struct {
		name string
		q    Query
	}{
		{"bash-allow", Query{Surface: "bash", MatchValues: []string{"git status --short"}, Agent: "Explore"}},
		{"bash-deny-reason", Query{Surface: "bash", MatchValues: []string{"git push --force origin main"}}},
		{"bash-ask-fallthrough", Query{Surface: "bash", MatchValues: []string{"make test"}}},
		{"tool-default", Query{Surface: "webfetch", MatchValues: []string{"https://example.com/docs"}}},
		{"path-3-aliases", Query{Surface: "path_write", MatchValues: []string{"/home/ada/src/p/main.go", "main.go", "/home/ada/src/p/main.go"}}},
		{"path-family-fold", Query{Surface: "path", MatchValues: []string{"/home/ada/src/p/main.go", "main.go"}}},
		{"asking-units-3", Query{Surface: "bash", MatchValues: []string{"git status"},
			AskingUnits: []AskingUnit{{Command: "git status"}, {Command: "ls -la"}, {Command: "git diff HEAD"}}}},
		{"floor", Query{Surface: "bash", MatchValues: []string{"git status"}, Floor: "<opaque-bash-wrapper>"}},
		{"guard-hit", Query{Surface: "path_write", MatchValues: []string{mailboxRoot + "/sessions/p/responses/x.json"}}},
	}
	for _, grants := range []int{0, 100} {
		p := benchPolicy(b, grants)
		for _, bq := range queries {
			b.Run(fmt.Sprintf("sessions=%d/%s", grants, bq.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p.Resolve(bq.q)
				}
			})
		}
	}
}

func BenchmarkExplain(b *testing.B) {
	p := benchPolicy(b, 0)
	q := Query{Surface: "bash", MatchValues: []string{"git push --force origin main"}}
	b.ReportAllocs()
	for b.Loop() {
		p.Explain(q)
	}
}

func BenchmarkParseDefaultConfig(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(DefaultSource, defaultJSON); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRecordGrant(b *testing.B) {
	s := NewSessionRules(testHome)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if s.Len() >= MaxSessionGrants {
			s = NewSessionRules(testHome)
		}
		if _, err := s.Record(WidthProven, SessionGrant{Surface: "bash", Pattern: fmt.Sprintf("c%d *", i)}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
