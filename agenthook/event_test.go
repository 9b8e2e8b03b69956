package agenthook

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecodeErrorsNameTheField: each refusal names the field and what
// was expected.
func TestDecodeErrorsNameTheField(t *testing.T) {
	base := `"hook_event_name":"PermissionRequest","cwd":"/w","tool_name":"Bash","tool_input":{"command":"ls"}`
	tests := []struct{ doc, want string }{
		{`[]`, "expected a JSON object, got an array"},
		{`{"cwd":"/w"}`, "hook_event_name: expected a non-empty string"},
		{`{"hook_event_name":"Stop"}`, `hook_event_name: expected PermissionRequest or PreToolUse, got "Stop"`},
		{`{"hook_event_name":1}`, "hook_event_name: expected a string, got a number"},
		{`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}`, "cwd: expected a non-empty string"},
		{`{"hook_event_name":"PreToolUse","cwd":"w","tool_name":"Bash","tool_input":{}}`, `cwd: expected an absolute path, got "w"`},
		{`{"hook_event_name":"PreToolUse","cwd":"/w","tool_input":{}}`, "tool_name: expected a non-empty string"},
		{`{"hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Bash"}`, "tool_input: expected an object, got nothing"},
		{`{"hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Bash","tool_input":[]}`, "tool_input: expected an object, got an array"},
		{`{` + base + `,"agent_id":null}`, "agent_id: expected a non-empty string when present"},
		{`{` + base + `,"agent_type":true}`, "agent_type: expected a string, got a boolean"},
		{`{` + base + `,"permission_suggestions":{}}`, "permission_suggestions: expected an array, got an object"},
		{`{` + base + `,"permission_suggestions":[1]}`, "permission_suggestions[0]: expected an object, got a number"},
		{`{` + base + `,"permission_suggestions":[{"type":"addRules"}]}`, "permission_suggestions[0].rules: expected an array, got nothing"},
		{`{` + base + `,"permission_suggestions":[{"type":"addRules","rules":[{"ruleContent":"x"}]}]}`, "permission_suggestions[0].rules[0].toolName: expected a non-empty string"},
		{`{` + base + `,"Cwd":"/x"}`, "invalid JSON document"},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.doc))
		if err == nil || !errors.Is(err, ErrEvent) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%s) = %v, want an error with %q", tt.doc, err, tt.want)
		}
	}
}

// TestAsksErrorsNameTheField: a tool's missing input field is named.
func TestAsksErrorsNameTheField(t *testing.T) {
	tests := []struct{ tool, input, want string }{
		{"Bash", `{}`, "tool_input.command: expected a non-empty string"},
		{"Write", `{"file_path":3}`, "tool_input.file_path: expected a string, got a number"},
		{"NotebookEdit", `{"file_path":"/x"}`, "tool_input.notebook_path"},
		{"Glob", `{"path":"/x"}`, "tool_input.pattern"},
		{"WebFetch", `{}`, "tool_input.url"},
		{"WebSearch", `{}`, "tool_input.query"},
		{"apply_patch", `{"command":"nothing"}`, "tool_input.command: expected a patch between"},
	}
	for _, tt := range tests {
		ev := Event{Cwd: "/w", ToolName: tt.tool, ToolInput: []byte(tt.input)}
		if _, err := Asks(ev, "s", "a"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Asks(%s %s) = %v, want %q", tt.tool, tt.input, err, tt.want)
		}
	}
}

func TestGlobRootNeverNarrower(t *testing.T) {
	tests := []struct{ dir, pattern, want string }{
		{"/w", "*.go", "/w"},
		{"/w", "src/**/*.go", "/w/src"},
		{"/w", "src/a.go", "/w/src"},
		{"/w", "/etc/**", "/etc"},
		{"/w", "/etc/passwd", "/etc"},
		{"/w/a/b", "../../x/*", "/w/x"},
		// A `..` after a wildcard climbs from whatever matched it, a link's
		// target included: anywhere.
		{"/w/a/b", "**/../../*", "/"},
		{"/w/a/b", "*/{..,c}/../*", "/"},
		{"/w/a/b", "src/*/../x", "/"},
		{"/w", "{/etc,src}/*", "/"},
		{"/w", "src/{a,/etc}/*", "/"},
		{"/w", "~/.ssh/*", "/"},
		{"/w", "a/[b]/c/*", "/w/a"},
	}
	for _, tt := range tests {
		// Lexically: pathAsks cleans it (and reads it through links too).
		if got := filepath.Clean(globDir(tt.dir, tt.pattern)); got != tt.want {
			t.Errorf("globDir(%q, %q) = %q, want %q when clean", tt.dir, tt.pattern, got, tt.want)
		}
	}
}

func TestPatchFiles(t *testing.T) {
	tests := []struct {
		patch string
		want  []string
		err   string
	}{
		{"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch", []string{"a"}, ""},
		{"*** Begin Patch\r\n*** Delete File: b\r\n*** End Patch\r\n", []string{"b"}, ""},
		{"*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@\n-x\n+y\n*** End of File\n*** End Patch", []string{"a", "b"}, ""},
		// A context line that reads like a header adds a file; it never
		// hides one.
		{"*** Begin Patch\n*** Update File: a\n@@\n *** Move to: c\n*** End Patch", []string{"a", "c"}, ""},
		{"apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nEOF", []string{"a"}, ""},
		{"*** Begin Patch\n*** Add File: \n*** End Patch", nil, "is not a line of the patch format"},
		{"*** Begin Patch\n*** Add File:  \t \n*** End Patch", nil, "is not a line of the patch format"},
		{"*** Begin Patch\n*** Rename File: a\n*** End Patch", nil, "is not a line of the patch format"},
		{"*** Begin Patch\n*** Add File: a\n", nil, "expected a patch between"},
		{"*** Begin Patch\n*** End Patch", nil, "names no file"},
		{"*** Begin Patch\n" + strings.Repeat("*** Add File: a\n", MaxPatchFiles+1) + "*** End Patch", nil, "over the"},
	}
	for _, tt := range tests {
		got, err := PatchFiles(tt.patch)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("PatchFiles(%q) = %v, %v; want error %q", tt.patch, got, err, tt.err)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("PatchFiles(%q) = %q, %v; want %q", tt.patch, got, err, tt.want)
		}
	}
}

func TestCheckSessionID(t *testing.T) {
	for _, ok := range []string{"a8f2c355829900d95", "01a231e1-b881-7623-af5c-506b0b872223", "a.b_c-d"} {
		if err := CheckSessionID(ok); err != nil {
			t.Errorf("CheckSessionID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "../x", "/", ".", "..", "-a", "a b", "a\x00", "a/b", "unknown", "UNKNOWN", "é", strings.Repeat("a", MaxSessionID+1)} {
		if err := CheckSessionID(bad); err == nil {
			t.Errorf("CheckSessionID(%q) = nil, want an error", bad)
		}
	}
}

// TestConfig: the settings parse as JSON, run the command given, and let
// the hook run longer than it waits.
func TestConfig(t *testing.T) {
	cmd := ShellJoin("/opt/courier bin/child", "hook", "codex", "--parent", "it's")
	if want := `'/opt/courier bin/child' hook codex --parent 'it'\''s'`; cmd != want {
		t.Fatalf("ShellJoin = %s, want %s", cmd, want)
	}
	for _, cli := range []CLI{ClaudeCode, Codex} {
		out := Config(cli, cmd, DefaultTimeout)
		var s struct {
			Hooks map[string][]struct {
				Matcher string
				Hooks   []struct {
					Type, Command string
					Timeout       int
				}
			}
		}
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("%s: %v\n%s", cli, err, out)
		}
		h := s.Hooks["PermissionRequest"][0].Hooks[0]
		if h.Type != "command" || h.Command != cmd || h.Timeout != 360 {
			t.Errorf("%s: %+v", cli, h)
		}
		golden(t, filepath.Join("testdata", "config_"+string(cli)+".golden"), out)
	}
}

// FuzzDecode: no input panics the decoder or the mapping, and an event
// that decodes maps to asks or to an error that wraps ErrEvent.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "events", "*.json"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"hook_event_name":"PermissionRequest","cwd":"/w","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Move to: ~/x\n*** End Patch"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrEvent) {
				t.Fatalf("error %v does not wrap ErrEvent", err)
			}
			return
		}
		asks, err := Asks(ev, "s", "a")
		if err != nil {
			if !errors.Is(err, ErrEvent) {
				t.Fatalf("error %v does not wrap ErrEvent", err)
			}
			return
		}
		if len(asks) == 0 {
			t.Fatal("an event mapped to no ask")
		}
		for _, a := range asks {
			if a.Surface == "" || a.Value == "" {
				t.Fatalf("an ask without a surface or value: %+v", a)
			}
		}
	})
}
