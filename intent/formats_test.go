package intent

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of the format tests")

// render is the golden form of a conversation: one block per item.
func render(items []Item) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString("--- " + it.Role)
		if it.Derived {
			b.WriteString(" (derived)")
		}
		b.WriteString("\n" + it.Text + "\n")
	}
	return b.String()
}

// markers are strings planted in the fixtures where nothing may be read
// from: tool inputs and results, thinking, reasoning, command output, the
// harness's injections, abandoned branches, extension messages.
var markers = []string{
	"TOOLINPUT-MARK", "TOOLRESULT-MARK", "THINKING-MARK", "REASONING-MARK", "RAWREASONING-MARK",
	"BASHOUTPUT-MARK", "SHELLOUTPUT-MARK", "CUSTOM-MARK", "HARNESS-MARK",
	"BRANCH-ABANDONED-MARK", "ABANDONED-REPLY-MARK", "ROLLED-BACK-MARK", "ROLLED-BACK-REPLY-MARK",
	"environment_context", "system-reminder", "local-command", "command-name",
	"AGENTS.md", "skills_instructions", "secret contents", "iVBORw0KGgo",
}

func TestFormats(t *testing.T) {
	tests := []struct {
		name, file, format string
		// want are the strings each conversation must hold, in order.
		want []string
	}{
		// Claude Code 2.1.328, run for real against a scripted model
		// endpoint: a tool call and its result, thinking, a second prompt
		// on a branch later rewound (--resume-session-at), /compact, a
		// prompt after it.
		{"claude-code", "claude-code.jsonl", FormatClaudeCode,
			[]string{"COMPACT-SUMMARY-MARK", "REWOUND-PROMPT-REPLY-MARK", "AFTER-COMPACT-MARK", "AFTER-COMPACT-REPLY-MARK"}},
		// Codex CLI 0.169.0, run for real: a reasoning item, a function
		// call and its output, an auto compaction, a prompt after it.
		{"codex", "codex.jsonl", FormatCodex,
			[]string{"USER-PROMPT-MARK", "COMPACT-SUMMARY-MARK", "SECOND-PROMPT-MARK", "OTHER-REPLY"}},
		// Codex's older rollout: no provenance, a compaction without its
		// replacement history, a rolled-back turn, a user shell command.
		{"codex-legacy", "codex-legacy.jsonl", FormatCodex,
			[]string{"LEGACY-USER-1", "LEGACY-SUMMARY", "LEGACY-USER-2", "LEGACY-ASSISTANT-2"}},
		// pi 0.73.1 (@mariozechner/pi-coding-agent), run for real: a
		// tool call and its result, thinking, an auto compaction (a small
		// context window) that kept every entry, a prompt after it.
		{"pi-real", "pi-real.jsonl", FormatPi,
			[]string{"PI-REAL-SUMMARY-MARK", "USER-PROMPT-MARK", "ASSISTANT-TEXT-MARK", "THIRD-PROMPT-MARK", "FOURTH-PROMPT-MARK"}},
		// pi's session format (docs/session-format.md): a branch left for a
		// branch summary, then a compaction that kept one entry.
		{"pi", "pi.jsonl", FormatPi,
			[]string{"PI-COMPACTION-SUMMARY", "Tests pass.", "PI-USER-3", "Pushing with lease."}},
		{"pi-branch", "pi-branch.jsonl", FormatPi,
			[]string{"PI-USER-1", "I'll remove ./build.", "Done, ./build removed.", "BRANCH-SUMMARY-MARK", "PI-USER-2", "Tests pass."}},
	}
	for _, tt := range tests {
		for _, format := range []string{tt.format, FormatAuto} {
			t.Run(tt.name+"/"+format, func(t *testing.T) {
				r, err := Open(filepath.Join("testdata", tt.file), Options{Format: format})
				if err != nil {
					t.Fatal(err)
				}
				items := r.Snapshot()
				st := r.Stats()
				if st.Format != tt.format || !st.CaughtUp || st.Err != nil || st.Skipped != 0 {
					t.Fatalf("stats %+v, want format %s, caught up, nothing skipped", st, tt.format)
				}
				got := render(items)
				golden := filepath.Join("testdata", tt.name+".golden")
				if *update && format == tt.format {
					if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("conversation of %s:\n%s\nwant (%s):\n%s", tt.file, got, golden, want)
				}
				rest := got
				for _, w := range tt.want {
					i := strings.Index(rest, w)
					if i < 0 {
						t.Errorf("conversation lacks %q (in this order: %q)", w, tt.want)
						break
					}
					rest = rest[i+len(w):]
				}
				assertClean(t, items, DefaultBudget)
			})
		}
	}
}

// assertClean checks what every conversation must be: within the budget,
// no planted marker, no control character, roles as documented.
func assertClean(t *testing.T, items []Item, budget int) {
	t.Helper()
	size := 0
	for _, it := range items {
		size += len(it.Text)
		if it.Role != RoleUser && it.Role != RoleAssistant {
			t.Errorf("item role %q", it.Role)
		}
		if it.Derived && it.Role != RoleAssistant {
			t.Errorf("derived item of role %q, want assistant", it.Role)
		}
		if it.Text == "" {
			t.Errorf("empty item %+v", it)
		}
		for _, m := range markers {
			if strings.Contains(it.Text, m) {
				t.Errorf("item holds %q, which it must not: %q", m, it.Text)
			}
		}
		for _, r := range it.Text {
			if dropped(r) {
				t.Errorf("item holds %U: %q", r, it.Text)
			}
		}
	}
	if size > budget {
		t.Errorf("conversation of %d bytes, budget %d", size, budget)
	}
}
