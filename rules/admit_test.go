package rules

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/bashunits"
	"github.com/seed6639df8c/courier/wire"
)

func grant(surface, pattern string) wire.SuggestedGrant {
	return wire.SuggestedGrant{Surface: surface, Pattern: pattern}
}

// TestAdmitGrants: a child's suggestion is admitted only when it covers a
// value that was asked and is no wider than the broker's own suggestion
// for it (or the value itself).
func TestAdmitGrants(t *testing.T) {
	p := defaultPolicy(t)
	bash := func(line string) Query { return Query{Surface: "bash", MatchValues: []string{line}} }
	boundary := "/srv/app/src/a.go"
	tests := []struct {
		name  string
		q     Query
		grant wire.SuggestedGrant
		// why is the start of the reason it is dropped, "" if admitted.
		why string
	}{
		{"the broker's own suggestion", bash("npm test"), grant("bash", "npm test *"), ""},
		{"the unit itself", bash("npm test"), grant("bash", "npm test"), ""},
		{"the unit's literal spelling", bash(`npm "test"`), grant("bash", "npm test"), ""},
		{"a suggestion per unit", bash("npm test && git diff --stat"), grant("bash", "git diff *"), ""},
		{"an asking unit", Query{Surface: "bash", MatchValues: []string{"x"}, AskingUnits: []AskingUnit{{Command: "make build"}}}, grant("bash", "make build *"), ""},
		{"the child's floor does not stop a grant", Query{Surface: "bash", MatchValues: []string{"npm test"}, Floor: bashunits.FloorOpaque}, grant("bash", "npm test *"), ""},
		{"everything", bash("npm test"), grant("bash", "*"), "it is wider"},
		{"the tool", bash("npm test"), grant("bash", "npm *"), "it is wider"},
		{"a near miss", bash("npm test"), grant("bash", "npm test*"), "it is wider"},
		{"another command", bash("npm test"), grant("bash", "sudo *"), "it covers no value"},
		{"another surface", bash("npm test"), grant("path_write", "/*"), `it names the surface "path_write"`},
		{"a floored unit", bash("curl x | sh"), grant("bash", "sh *"), "it covers no value"},
		{"only floored units", bash("sudo make"), grant("bash", "sudo *"), "every unit that was asked is floored"},
		{"a wildcard surface", bash("npm test"), grant("*", "npm test *"), "invalid session grant"},
		{"an empty pattern", bash("npm test"), grant("bash", ""), "invalid session grant"},
		{"no access facts", Query{}, grant("bash", "npm test *"), "the ask carries no access facts"},
		{"the directory glob", Query{Surface: "path_write", MatchValues: []string{"/srv/app/src/a.go"}, BoundaryValue: &boundary}, grant("path_write", "/srv/app/src/*"), ""},
		{"the exact path", Query{Surface: "path_write", MatchValues: []string{"/srv/app/src/a.go"}}, grant("path_write", "/srv/app/src/a.go"), ""},
		{"the directory glob of the cleaned path", Query{Surface: "path_write", MatchValues: []string{"/srv/app/work/../../../etc/cron.d/evil"}}, grant("path_write", "/etc/cron.d/*"), ""},
		{"the glob the uncleaned path would match", Query{Surface: "path_write", MatchValues: []string{"/srv/app/work/../../../etc/cron.d/evil"}}, grant("path_write", "/srv/app/work/*"), "it covers no value"},
		{"a parent's glob", Query{Surface: "path_write", MatchValues: []string{"/srv/app/src/a.go"}}, grant("path_write", "/srv/app/*"), "it is wider"},
		{"the whole filesystem", Query{Surface: "path_write", MatchValues: []string{"/evil"}}, grant("path_write", "/*"), "it is wider"},
		{"a file directly under /", Query{Surface: "path_write", MatchValues: []string{"/evil"}}, grant("path_write", "/evil"), ""},
		{"the family is applied later, not suggested", Query{Surface: "path_write", MatchValues: []string{"/srv/app/src/a.go"}}, grant("path", "/srv/app/src/*"), `it names the surface "path"`},
		{"a member of a bare family ask", Query{Surface: "path", MatchValues: []string{"/srv/app/src/a.go"}}, grant("path_read", "/srv/app/src/*"), ""},
		{"a tool's value", Query{Surface: "mcp_exa_search", MatchValues: []string{"courier"}}, grant("mcp_exa_search", "courier"), ""},
		{"a tool's value widened", Query{Surface: "mcp_exa_search", MatchValues: []string{"courier"}}, grant("mcp_exa_search", "*"), "it is wider"},
		{"a tool's value holding a wildcard", Query{Surface: "mcp_exa_search", MatchValues: []string{"court*"}}, grant("mcp_exa_search", "court*"), "it is wider"},
		{"a tool ask without a value", Query{Surface: "mcp_exa_search"}, grant("mcp_exa_search", "*"), "the ask carries no value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			admitted, dropped := p.AdmitGrants(tt.q, []wire.SuggestedGrant{tt.grant})
			if tt.why == "" {
				if !slices.Equal(admitted, []wire.SuggestedGrant{tt.grant}) || len(dropped) != 0 {
					t.Errorf("admitted %v, dropped %v", admitted, dropped)
				}
				return
			}
			if len(admitted) != 0 || len(dropped) != 1 || dropped[0].Grant != tt.grant || !strings.HasPrefix(dropped[0].Why, tt.why) {
				t.Errorf("admitted %v, dropped %+v; want it dropped: %s…", admitted, dropped, tt.why)
			}
		})
	}
}

// TestAdmitGrantsAttack is the ask of the hardening review: six
// suggestions on `npm test`, `bash *` and `path_write /*` among them.
func TestAdmitGrantsAttack(t *testing.T) {
	p := defaultPolicy(t)
	six := []wire.SuggestedGrant{
		grant("bash", "npm test *"), grant("bash", "npm *"), grant("bash", "sudo *"),
		grant("bash", "npm test *"), grant("bash", "*"), grant("path_write", "/*"),
	}
	admitted, dropped := p.AdmitGrants(Query{Surface: "bash", MatchValues: []string{"npm test"}, AskingUnits: []AskingUnit{{Command: "npm test"}}}, six)
	if !slices.Equal(admitted, six[:1]) {
		t.Errorf("admitted %v", admitted)
	}
	var whys []string
	for _, d := range dropped {
		whys = append(whys, fmt.Sprintf("%s %s: %s", d.Grant.Surface, d.Grant.Pattern, d.Why))
	}
	want := []string{
		"bash npm *: it is wider than the broker's own suggestion for every value it covers",
		"bash sudo *: it covers no value that was asked",
		"bash npm test *: a duplicate",
		"bash *: it is wider than the broker's own suggestion for every value it covers",
		`path_write /*: it names the surface "path_write"; the ask is on "bash"`,
	}
	if !slices.Equal(whys, want) {
		t.Errorf("dropped\n%s\nwant\n%s", strings.Join(whys, "\n"), strings.Join(want, "\n"))
	}
}

func TestAdmitOperatorGrants(t *testing.T) {
	p := defaultPolicy(t)
	q := Query{Surface: "bash", MatchValues: []string{"npm test && curl x | sh"}}
	chosen := []wire.SuggestedGrant{
		grant("bash", "npm *"), grant("bash", "*"), grant("bash", "sudo *"),
		grant("path_write", "/*"), grant("bash", "sh"), grant("bash", "npm *"),
	}
	admitted, dropped := p.AdmitOperatorGrants(q, chosen)
	if !slices.Equal(admitted, chosen[:2]) || len(dropped) != 4 {
		t.Errorf("admitted %v, dropped %+v", admitted, dropped)
	}
}

func TestAdmitGrantsBound(t *testing.T) {
	p := defaultPolicy(t)
	many := make([]wire.SuggestedGrant, 10_000)
	for i := range many {
		many[i] = grant("bash", fmt.Sprintf("tool-%d *", i))
	}
	many[0] = grant("bash", "npm test *")
	admitted, dropped := p.AdmitGrants(Query{Surface: "bash", MatchValues: []string{"npm test"}}, many)
	if len(admitted) != 1 || len(dropped) != MaxAdmissionGrants {
		t.Fatalf("admitted %d, dropped %d", len(admitted), len(dropped))
	}
	if last := dropped[len(dropped)-1].Why; !strings.Contains(last, "9936 grants past the first 64") {
		t.Errorf("last drop: %s", last)
	}
}

// FuzzAdmitGrants: whatever the ask and the suggestion, an admitted grant
// matches a value that was asked, on the ask's surface (or a member of its
// family), and no unit the splitter floors; admission never panics.
func FuzzAdmitGrants(f *testing.F) {
	for _, s := range []struct{ surface, value, gSurface, pattern string }{
		{"bash", "npm test", "bash", "npm test *"},
		{"bash", "npm test && curl x | sh", "bash", "sh *"},
		{"bash", "git status $(curl x)", "bash", "curl *"},
		{"path_write", "/srv/app/../etc/x", "path_write", "/etc/*"},
		{"path", "/a/b", "path_read", "/a/*"},
		{"mcp_x", "court*", "mcp_x", "*"},
		{"bash", "*", "bash", "*"},
	} {
		f.Add(s.surface, s.value, s.gSurface, s.pattern)
	}
	p := defaultPolicy(f)
	f.Fuzz(func(t *testing.T, surface, value, gSurface, pattern string) {
		q := Query{Surface: surface, MatchValues: []string{value}}
		g := grant(gSurface, pattern)
		for _, admit := range []func(Query, []wire.SuggestedGrant) ([]wire.SuggestedGrant, []DroppedGrant){p.AdmitGrants, p.AdmitOperatorGrants} {
			admitted, dropped := admit(q, []wire.SuggestedGrant{g})
			if len(admitted)+len(dropped) != 1 {
				t.Fatalf("%+v: %d admitted, %d dropped", g, len(admitted), len(dropped))
			}
			if len(admitted) == 0 {
				continue
			}
			if gSurface != surface && !slices.Contains(familyMembers(surface), gSurface) {
				t.Fatalf("%+v admitted on an ask on %q", g, surface)
			}
			compiled := CompilePattern(pattern, testHome)
			var asked []string
			switch {
			case surface == "bash":
				for _, u := range bashunits.Split(value) {
					if u.Floor == "" {
						asked = append(asked, u.Command)
						if u.Literal != "" {
							asked = append(asked, u.Literal)
						}
					}
				}
			case isPathSurface(surface):
				asked = []string{cleanPath(value)}
			default:
				asked = []string{value}
			}
			if !slices.ContainsFunc(asked, compiled.Match) {
				t.Fatalf("%+v admitted for %s %q, but it matches none of %q", g, surface, value, asked)
			}
		}
	})
}
