package rules

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/<name>, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run go test -update to accept)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestConfigGolden parses every testdata/config/*.json under the name
// config.json and pins its error text, or the warnings of a valid one.
func TestConfigGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "config", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Parse("config.json", data)
			var got strings.Builder
			if err != nil {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Errorf("error %v does not wrap ErrInvalidConfig", err)
				}
				got.WriteString("error:\n" + err.Error() + "\n")
			} else {
				got.WriteString("ok\n")
				for _, w := range cfg.Warnings {
					got.WriteString("warning: " + w.String() + "\n")
				}
			}
			golden(t, filepath.Join("config", name+".golden"), got.String())
		})
	}
}

// The example of a problem rules/doc.go shows, byte for byte.
func TestConfigErrorNamesFileLineColumnAndExpectation(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "config", "bad-action.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Parse("config.json", data)
	want := `config.json:7:16: permission.bash["git *"]: expected "allow", "ask", "deny" or {"action":"deny","reason":...}, got "alow"`
	if err == nil || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Line != 7 || ce.Problems[0].Column != 16 {
		t.Fatalf("problems = %+v", ce)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "courier.json")
	if err := os.WriteFile(path, []byte(`{"permission": {"bash": {"git *": "alow"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":1:35: ") {
		t.Errorf("LoadFile error = %v, want it to start with %s:1:35: ", err, path)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.json")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want an error wrapping os.ErrNotExist", err)
	}
	if _, err := LoadFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v, want 'not a regular file'", err)
	}
	cfg, err := Load("")
	if err != nil || cfg.Source != DefaultSource {
		t.Errorf("Load(\"\") = %v, %v; want the embedded default", cfg, err)
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := Parse("c.json", []byte(`{"permission": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.YoloMode || cfg.ForwardingTimeout != 600*time.Second || cfg.ReviewLogFieldMaxWidth != 1000 ||
		cfg.ReviewLogMaxBytes != 64<<20 ||
		cfg.PromptTimeout != 0 || cfg.Permission.Default != nil || len(cfg.Permission.Rules) != 0 {
		t.Errorf("defaults = %+v", cfg)
	}
	cfg, err = Parse("c.json", []byte(`{"permission": {}, "yoloMode": true, "forwardingTimeoutMs": 1e3, "reviewLogFieldMaxWidth": 80, "reviewLogMaxBytes": 4096, "promptTimeoutMs": 30000.0}`))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.YoloMode || cfg.ForwardingTimeout != time.Second || cfg.ReviewLogFieldMaxWidth != 80 || cfg.ReviewLogMaxBytes != 4096 || cfg.PromptTimeout != 30*time.Second {
		t.Errorf("knobs = %+v", cfg)
	}
}

// ruleList renders rules compactly for comparison.
func ruleList(rules []Rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		s := r.Surface + " " + r.Pattern + " " + string(r.Action)
		if r.SurfaceWide {
			s += " wide"
		}
		if r.Reason != "" {
			s += " (" + r.Reason + ")"
		}
		out[i] = s + " " + string(r.Origin) + "@" + r.At
	}
	return out
}

func TestPermissionParsing(t *testing.T) {
	tests := []struct {
		name, doc string
		want      []string
	}{
		{
			name: "string shorthand is surface-wide, maps keep file order",
			doc: `{"permission": {"bash": {"*": "ask", "git *": "allow", "npm *": {"action": "deny", "reason": "Use pnpm instead"}},
"read": "allow"}}`,
			want: []string{
				"bash * ask global@c.json:1:26",
				"bash git * allow global@c.json:1:38",
				"bash npm * deny (Use pnpm instead) global@c.json:1:56",
				"read * allow wide global@c.json:2:9",
			},
		},
		{
			name: "bare path expands to read then write",
			doc:  `{"permission": {"path": {"/etc/*": "deny"}}}`,
			want: []string{
				"path_read /etc/* deny global@c.json:1:26",
				"path_write /etc/* deny global@c.json:1:26",
			},
		},
		{
			// As pi's expandDirectionalSugar expands it (see expandSugar in
			// parse_permission.go): sugar entries first, explicit member
			// entries after, a pattern the member redefines once at the
			// member's place, whatever the textual order; the member keeps
			// its key position.
			name: "sugar first, explicit member after",
			doc: `{"permission": {
"path_read": {"/a/*": "allow", "/b/*": "deny"},
"path": {"/b/*": "ask", "/c/*": "deny"}}}`,
			want: []string{
				"path_read /c/* deny global@c.json:3:25",
				"path_read /a/* allow global@c.json:2:15",
				"path_read /b/* deny global@c.json:2:32",
				"path_write /b/* ask global@c.json:3:10",
				"path_write /c/* deny global@c.json:3:25",
			},
		},
		{
			name: "string sugar and string member",
			doc:  `{"permission": {"external_directory": "deny", "external_directory_write": "ask"}}`,
			want: []string{
				"external_directory_read * deny wide global@c.json:1:39",
				"external_directory_write * ask wide global@c.json:1:75",
			},
		},
		{
			// JavaScript lists integer-like keys first, in numeric order.
			name: "integer-like keys first",
			doc:  `{"permission": {"bash": {"git *": "ask", "123": "deny", "7": "allow", "007": "allow"}}}`,
			want: []string{
				"bash 7 allow global@c.json:1:57",
				"bash 123 deny global@c.json:1:42",
				"bash git * ask global@c.json:1:26",
				"bash 007 allow global@c.json:1:71",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("c.json", []byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			got := ruleList(cfg.Permission.Rules)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestAgentsParsing(t *testing.T) {
	cfg, err := Parse("c.json", []byte(`{"permission": {"*": "deny"}, "agents": {"Explore": {"permission": {"*": "allow", "bash": {"git *": "allow"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.Permission.Default; d == nil || d.Action != Deny || d.Origin != OriginDefault {
		t.Errorf("default = %+v", d)
	}
	ex, ok := cfg.Agents["Explore"]
	if !ok || ex.Default == nil || ex.Default.Action != Allow {
		t.Fatalf("agent Explore = %+v", ex)
	}
	if got := ruleList(ex.Rules); len(got) != 1 || got[0] != "bash git * allow agent@c.json:1:92" {
		t.Errorf("agent rules = %v", got)
	}
}

// The embedded default parses with the same loader, warns about nothing,
// and has at least one deny with a teaching reason.
func TestDefaultConfig(t *testing.T) {
	cfg, err := Load("")
	if err != nil {
		t.Fatalf("embedded default: %v", err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
	if cfg.Permission.Default == nil || cfg.Permission.Default.Action != Ask || cfg.YoloMode {
		t.Errorf("default action %+v, yolo %v", cfg.Permission.Default, cfg.YoloMode)
	}
	p, err := NewPolicy(cfg, Options{Home: testHome})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		value  string
		want   Action
		reason string
	}{
		{"git status", Allow, ""},
		{"git status --short", Allow, ""},
		{"git diff HEAD~1", Allow, ""},
		{"git log --oneline", Allow, ""},
		{"ls", Allow, ""},
		{"ls -la src", Allow, ""},
		{"pwd", Allow, ""},
		{"git diff --output=/tmp/x", Ask, ""},
		{"git push origin main", Ask, ""},
		{"make test", Ask, ""},
		{"git push --force origin main", Deny, "Force-pushing rewrites shared history; push to a new branch instead"},
		{"git push origin main --force", Deny, "Force-pushing rewrites shared history; push to a new branch instead"},
		{"git push -f", Deny, "Force-pushing rewrites shared history; push to a new branch instead"},
		{"git push origin feature-fix", Ask, ""},
		{"rm -rf /", Deny, "This deletes the whole filesystem; delete the specific directory inside the worktree instead"},
		{"sudo apt-get install x", Deny, "A subagent may not run commands as root; ask the operator to run it"},
	} {
		d := p.Resolve(Query{Surface: "bash", MatchValues: []string{tt.value}})
		if d.Action != tt.want || d.Reason != tt.reason {
			t.Errorf("bash %q = %s %q, want %s %q", tt.value, d.Action, d.Reason, tt.want, tt.reason)
		}
	}
	d := p.Resolve(Query{Surface: "path_read", MatchValues: []string{testHome + "/.ssh/id_ed25519"}})
	if d.Action != Deny || !strings.Contains(d.Reason, "SSH keys") {
		t.Errorf("reading ~/.ssh = %v %q", d, d.Reason)
	}
}

var diagLine = regexp.MustCompile(`^fuzz\.json:[1-9][0-9]*:[1-9][0-9]*: `)

// FuzzParse: the loader never panics, every problem has a place, and a
// config it accepts composes into a policy that resolves.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "config", "*.json"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add(DefaultConfigJSON())
	f.Add([]byte(`{"permission":{"path":{"1":"deny","a":"allow"},"path_read":"ask"},"agents":{"x":{"permission":{"*":"allow"}}}}`))
	f.Add([]byte(`{"permission":{"bash":"deny"},"agents":{"x":{"permission":{"*":"allow"},"users":[7,"8","root",1.5,"no-such-user-x"]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.json", data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("error %v is not a *ConfigError with problems", err)
			}
			lines := strings.Count(string(data), "\n") + 1
			for _, p := range ce.Problems {
				if !diagLine.MatchString(p.String()) || p.Line > lines {
					t.Fatalf("problem %q has no place in a %d-line document", p.String(), lines)
				}
			}
			return
		}
		for _, w := range cfg.Warnings {
			if !diagLine.MatchString(w.String()) {
				t.Fatalf("warning %q has no place", w.String())
			}
		}
		p, err := NewPolicy(cfg, Options{Home: testHome})
		if err != nil {
			t.Fatal(err)
		}
		p.Resolve(Query{Surface: "path", MatchValues: []string{"/a", "a"}, Agent: "x", Floor: "<f>"})
		// Isolation mode: whatever the agent says, an unvouched uid gets
		// no answer wider than the global rules give.
		for _, q := range []Query{
			{Surface: "bash", MatchValues: []string{"git push --force && ls"}, Agent: "x", Isolated: true, UID: 7},
			{Surface: "path_write", MatchValues: []string{"/a/b"}, BoundaryValue: new("/a/b"), Agent: "x", Isolated: true, UID: 7},
		} {
			d := p.Resolve(q)
			if d.AgentTrust != AgentNotVouched && d.AgentTrust != AgentVouched {
				if _, ok := cfg.Agents["x"]; ok {
					t.Fatalf("agent x has overrides, but the trust is %s", d.AgentTrust)
				}
			}
			if d.AgentTrust == AgentNotVouched {
				g := q
				g.Agent = ""
				if gd := p.Resolve(g); gd.Action.MoreRestrictive(d.Action) {
					t.Fatalf("unvouched %v: %s, wider than the global rules' %s", q, d.Action, gd.Action)
				}
			}
		}
		p.Resolve(Query{Surface: "bash", MatchValues: []string{"git status"}, AskingUnits: []AskingUnit{{Command: "ls"}}})
	})
}
