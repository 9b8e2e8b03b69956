package intent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// decode reads data as a whole transcript of format, without a file: the
// path the fuzz targets take.
func decode(t testing.TB, format string, data []byte, budget int) []Item {
	r, err := Open(filepath.Join(os.TempDir(), "intent-never-there.jsonl"), Options{Format: format, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	r.consume(data)
	if r.dec == nil {
		return nil
	}
	return newest(r.dec.conversation(r.budget), r.budget)
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name, format, data, want string
	}{
		{"a repeated key refuses the line", FormatPi,
			piHeader + `{"type":"message","id":"a1","parentId":null,"message":{"role":"user","ROLE":"assistant","content":"twice"}}` + "\n" +
				piLine("a2", "a1", RoleUser, "after"),
			"after"},
		{"a cycle of parents ends the walk", FormatPi,
			piLine("a1", "a2", RoleUser, "one") + piLine("a2", "a1", RoleUser, "two"),
			"one|two"},
		{"pi: a compaction whose first kept entry is not on the path keeps none", FormatPi,
			piLine("a1", "", RoleUser, "old") +
				`{"type":"compaction","id":"c1","parentId":"a1","summary":"SUM","firstKeptEntryId":"elsewhere","tokensBefore":1}` + "\n" +
				piLine("a2", "c1", RoleUser, "new"),
			"SUM|new"},
		{"pi: version 1, no ids, read in file order", FormatPi,
			`{"type":"message","message":{"role":"user","content":"v1 one"}}` + "\n" +
				`{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"v1 two"}]}}` + "\n",
			"v1 one|v1 two"},
		{"pi: a user turn the harness wrote is dropped whole", FormatPi,
			piLine("a1", "", RoleUser, "<skill name=\"x\">do it</skill> go") + piLine("a2", "a1", RoleUser, "mine"),
			"mine"},
		{"claude: meta, sidechain and tool results are no turns", FormatClaudeCode,
			`{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"hello"}}` + "\n" +
				`{"type":"user","uuid":"u2","parentUuid":"u1","isMeta":true,"message":{"role":"user","content":"META"}}` + "\n" +
				`{"type":"assistant","uuid":"s1","parentUuid":"u2","isSidechain":true,"message":{"role":"assistant","content":[{"type":"text","text":"SIDE"}]}}` + "\n" +
				`{"type":"user","uuid":"u3","parentUuid":"u2","message":{"role":"user","content":[{"type":"text","text":"RESULT-TEXT"},{"type":"tool_result","tool_use_id":"t","content":"R"}]}}` + "\n" +
				`{"type":"assistant","uuid":"a1","parentUuid":"u3","message":{"role":"user","content":"ROLE-MISMATCH"}}` + "\n" +
				`{"type":"user","uuid":"u4","parentUuid":"a1","message":{"role":"user","content":"<bash-stdout>OUT</bash-stdout>"}}` + "\n" +
				`{"type":"user","uuid":"u5","parentUuid":"u4","message":{"role":"user","content":"bye"}}` + "\n",
			"hello|bye"},
		{"claude: a forgotten parent ends the path, a skipped line is bridged", FormatClaudeCode,
			`{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"kept"}}` + "\n" +
				`not json` + "\n" +
				`{"type":"user","uuid":"u3","parentUuid":"u2","message":{"role":"user","content":"after the gap"}}` + "\n" +
				`{"type":"user","uuid":"u4","parentUuid":"never","message":{"role":"user","content":"orphan"}}` + "\n",
			"orphan"},
		{"claude: the bridged gap", FormatClaudeCode,
			`{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"kept"}}` + "\n" +
				`not json` + "\n" +
				`{"type":"user","uuid":"u3","parentUuid":"u2","message":{"role":"user","content":"after the gap"}}` + "\n",
			"kept|after the gap"},
		{"codex: a rollback past every turn leaves nothing before", FormatCodex,
			`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"one"}]}}` + "\n" +
				`{"type":"event_msg","payload":{"type":"thread_rolled_back","num_turns":5}}` + "\n" +
				`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"two"}]}}` + "\n",
			"two"},
		{"codex: a harness provenance is no user turn", FormatCodex,
			`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"plain words"}],"internal_chat_message_metadata_passthrough":{"content_item_metadata":[{"provenance":{"type":"harness"}}]}}}` + "\n" +
				`{"type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"DEV"}]}}` + "\n" +
				`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"mine"}]}}` + "\n",
			"mine"},
		{"codex: the answer to a compaction request is no turn", FormatCodex,
			`{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"mine"}]}}` + "\n" +
				`{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"SUMMARY AS ANSWER"}]},"metadata":{"compaction_output":true}}` + "\n",
			"mine"},
		{"control characters and escapes are removed", FormatPi,
			piLine("a1", "", RoleUser, "a\x1b[2Jb\x1b]0;title\x07c\rd\x00e\u202ef\tg\nh"),
			"abcdef\tg\nh"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := decode(t, tt.format, []byte(tt.data), DefaultBudget)
			if got := texts(items); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			assertClean(t, items, DefaultBudget)
		})
	}
}

func TestHarness(t *testing.T) {
	for text, want := range map[string]bool{
		"<environment_context>\n<cwd>/w</cwd>":    true,
		"  <command-name>/compact</command-name>": true,
		"<local-command-stdout>x":                 true,
		`<skill name="deploy">`:                   true,
		"<br/> a":                                 true,
		"# AGENTS.md instructions for /w\n":       true,
		"please fix <b>this</b>":                  false,
		"<3 thanks":                               false,
		"a < b and c > d":                         false,
		"</close>":                                false,
		"":                                        false,
	} {
		if got := harness(text); got != want {
			t.Errorf("harness(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestCutHead(t *testing.T) {
	for _, max := range []int{1, 5, 30, 39, 40, 41, 100} {
		s := strings.Repeat("日本語", 10) + "END"
		got := cutHead(s, max)
		if len(got) > max || !utf8.ValidString(got) {
			t.Errorf("cutHead(%d) = %q: %d bytes or invalid", max, got, len(got))
		}
	}
}

// The fuzz targets feed any bytes to a decoder: it must not panic, and
// what it returns must be within the budget, cleaned, of the roles
// documented.
func fuzzFormat(f *testing.F, format string, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		items := decode(t, format, data, MinBudget)
		size := 0
		for _, it := range items {
			size += len(it.Text)
			if it.Role != RoleUser && it.Role != RoleAssistant || it.Text == "" || (it.Derived && it.Role != RoleAssistant) {
				t.Fatalf("item %+v", it)
			}
			for _, r := range it.Text {
				if dropped(r) {
					t.Fatalf("item holds %U", r)
				}
			}
		}
		if size > MinBudget {
			t.Fatalf("%d bytes, budget %d", size, MinBudget)
		}
	})
}

func seedFile(f *testing.F, name string) string {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	return string(data)
}

func FuzzPi(f *testing.F) {
	fuzzFormat(f, FormatPi, seedFile(f, "pi.jsonl"), seedFile(f, "pi-branch.jsonl"), seedFile(f, "pi-real.jsonl"), piLine("a", "a", RoleUser, "x"))
}

func FuzzClaudeCode(f *testing.F) {
	fuzzFormat(f, FormatClaudeCode, seedFile(f, "claude-code.jsonl"))
}

func FuzzCodex(f *testing.F) {
	fuzzFormat(f, FormatCodex, seedFile(f, "codex.jsonl"), seedFile(f, "codex-legacy.jsonl"))
}

func FuzzAuto(f *testing.F) {
	fuzzFormat(f, FormatAuto, seedFile(f, "pi.jsonl"), seedFile(f, "codex-legacy.jsonl"))
}
