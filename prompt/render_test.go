package prompt

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

// frameText joins a frame's text, one line each.
func frameText(lines []line) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text + "\n")
	}
	return b.String()
}

// hostileAsk carries escape sequences, controls and bidi overrides in
// every string a child controls.
func hostileAsk() serve.Ask {
	const esc = "\x1b"
	payload, _ := json.Marshal(map[string]any{
		"evidence": []any{
			map[string]any{"label": "unit" + esc + "[1A", "text": "rm -rf /" + esc + "[2K", "detail": "\u202eexe.txt"},
			map[string]any{"label": 5, "text": []int{1}}, // wrong types: skipped
			"not an object",
			map[string]any{"text": "only text"},
		},
	})
	a := serve.Ask{Request: wire.Request{
		ID: "perm-x", RequesterAgentName: "evil" + esc + "[2J" + esc + "[H", RequesterSessionID: "child" + esc + "]0;title\x07",
		Surface: "bash" + esc + "[31m", Value: "ls" + esc + "[8m; curl x | sh\r\n",
		Message: "Allow?\n" + esc + "[31mred\u009b31m",
		Payload: payload,
		SessionApproval: &wire.SessionApproval{Grants: []wire.SuggestedGrant{
			{Surface: "bash", Pattern: "ls*" + esc + "[K"},
		}},
		AccessIntent: &wire.AccessIntent{
			Surface: "bash", MatchValues: []string{"ls" + esc + "[8m; curl x | sh\r\n", "ls\x00"}, RequesterCwd: "/w\x1b[H",
			Principal: wire.Principal{SessionID: "child", AgentName: "evil\x07"},
			Floor:     "<opaque\x1b>", AskingUnits: []wire.AskingUnit{{Command: "curl x\x1b[A", Floor: "<net\x9b>"}},
		},
	}}
	a.Grants = a.Request.SessionApproval.Grants
	return a
}

// ourSGR matches the attributes the frame itself uses.
var ourSGR = regexp.MustCompile(`\x1b\[(0|1|7)m`)

func TestHostileAskRendersInert(t *testing.T) {
	for _, st := range []stage{stageChoose, stageScope, stageReason, stageEdit} {
		m := &machine{}
		m.push(newEntry(hostileAsk()), t0)
		m.stage = st
		if st == stageEdit {
			m.startEdit(m.head())
			pressAll(m, t0, char('x'), enter) // refused: the notice quotes it
		}
		for _, size := range [][2]int{{100, 40}, {60, 20}, {30, 8}} {
			lines := m.frame(size[0], size[1], "parent\x1b[2J", t0)
			for _, l := range lines {
				assertInert(t, l.text)
				if ourSGR.ReplaceAllString(l.sgr, "") != "" {
					t.Errorf("unexpected attribute %q", l.sgr)
				}
			}
		}
	}
}

func TestDescribe(t *testing.T) {
	m := &machine{}
	m.push(newEntry(hostileAsk()), t0)
	text := frameText(m.frame(120, 60, "parent", t0))
	for _, want := range []string{
		`'evil\x1b[2J\x1b[H' · session child\x1b]0;title\x07 (rules apply to agent 'evil\x07')`,
		`command    ls\x1b[8m; curl x | sh\r\n`,
		`matched as ls\x00`,
		`cwd        /w\x1b[H`,
		`child floor <opaque\x1b>`,
		`asking unit: curl x\x1b[A (floor <net\x9b>)`,
		"\n  evidence from the subagent:\n  │ unit\\x1b[1A: rm -rf /\\x1b[2K — \\u202eexe.txt\n  │ only text\n",
		`grant      bash: ls*\x1b[K`,
		"\n  message from the subagent:\n  │ Allow?\n  │ \\x1b[31mred\\u009b31m\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("frame lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "not an object") {
		t.Errorf("a malformed evidence entry was shown:\n%s", text)
	}
}

func TestWhy(t *testing.T) {
	old := testAsk("old", "git push", false)
	old.Request.AccessIntent = nil
	pattern := "git push *"
	tests := []struct {
		name string
		ask  serve.Ask
		want string
	}{
		{"a pi 20.x child", old, "no access facts: pi 20.x child: the rules were not consulted\ns is this subagent only"},
		{"the default", testAsk("a", "git push", false), "no rule matched: the default is ask"},
		{"a rule", func() serve.Ask {
			a := testAsk("a", "git push", false)
			a.Resolution = rules.Resolution{Action: rules.Ask, Rule: rules.Rule{Surface: "bash", Pattern: pattern, Action: rules.Ask, Origin: rules.OriginGlobal, At: "c.json:3:5"}}
			return a
		}(), `rule bash "git push *" (global, c.json:3:5) says ask`},
		{"a floor", func() serve.Ask {
			a := testAsk("a", "git push", false)
			a.Request.AccessIntent.Floor = "<opaque-bash-wrapper>"
			a.Resolution = rules.Resolution{Action: rules.Ask, Floor: "<opaque-bash-wrapper>", Rule: rules.Rule{Surface: "bash", Pattern: "*", SurfaceWide: true, Action: rules.Allow, Origin: rules.OriginAgent}}
			return a
		}(), "floor <opaque-bash-wrapper>: the child asks even where a rule allows (rule bash (agent))"},
		{"a floor the broker found in a unit", func() serve.Ask {
			a := testAsk("a", "sudo make install", false)
			a.Resolution = rules.Resolution{Action: rules.Ask, Floor: "<indirection-bash-wrapper>", Rule: rules.Rule{Surface: "bash", Pattern: "*", SurfaceWide: true, Action: rules.Allow, Origin: rules.OriginAgent}}
			return a
		}(), "floor <indirection-bash-wrapper>: a unit asks even where a rule allows (rule bash (agent))"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(why(&tt.ask), "\n"); !strings.Contains(got, tt.want) {
				t.Errorf("why = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEvidenceTolerant(t *testing.T) {
	text := func(p string) string { return string(bytes.Join(evidence(json.RawMessage(p)), nil)) }
	for _, p := range []string{``, `{}`, `{"evidence": 5}`, `{"evidence": "x"}`, `{"evidence": [null, 1, [], {"label": null}]}`, `[1]`, `{"evidence": [{"label": "x"}`} {
		if got := text(p); got != "" {
			t.Errorf("evidence(%s) = %q, want nothing", p, got)
		}
	}
	raw, _ := json.Marshal(map[string]any{"evidence": []map[string]string{{"label": "l", "text": "t"}, {"text": "only", "detail": "d"}, {"label": " ", "detail": "\u00e9\n"}}})
	if got := text(string(raw)); got != "l: t\nonly: d\n\u00e9\n" {
		t.Errorf("evidence = %q", got)
	}
}

// keepPieces keeps what keep keeps of the joined text, without joining it.
func TestKeepPieces(t *testing.T) {
	pieces := [][]byte{[]byte("héllo"), []byte(": "), []byte(strings.Repeat("日本", 3000)), []byte("\n"), []byte("the end é")}
	joined := string(bytes.Join(pieces, nil))
	for _, size := range [][2]int{{1 << 20, 0}, {10, 10}, {7, 9}, {100, 3}, {0, 0}} {
		got, want := keepPieces(pieces, size[0], size[1]), keep(joined, size[0], size[1])
		if got != want {
			t.Errorf("keepPieces(%v) = %+v, want %+v", size, got, want)
		}
	}
}

func TestFrameLayout(t *testing.T) {
	m := &machine{}
	m.push(newEntry(testAsk("reviewer", "git push origin main", true)), t0)
	m.push(newEntry(testAsk("b", "two", true)), t0)
	m.push(newEntry(testAsk("c", "three", true)), t0)

	text := frameText(m.frame(100, 28, "parent", t0))
	for _, want := range []string{"Permission Required (Subagent)", "2 more waiting", "'reviewer' · session child-reviewer",
		"command    git push origin main", "grant      bash: git *", "[y] Yes, once", "[s] Yes, for this session",
		"[n] No", "[r] No, with a reason", "or press y s n r"} {
		if !strings.Contains(text, want) {
			t.Errorf("frame lacks %q:\n%s", want, text)
		}
	}

	pressAll(m, t0, char('s'))
	text = frameText(m.frame(100, 28, "parent", t0))
	for _, want := range []string{"Apply a session grant to:", "        records bash: git *\n",
		"[1] This subagent ('reviewer') only", "[2] The whole session (parent + all subagents)", "esc = this subagent only"} {
		if !strings.Contains(text, want) {
			t.Errorf("scope frame lacks %q:\n%s", want, text)
		}
	}
	for _, l := range m.frame(100, 28, "parent", t0) {
		if strings.Contains(l.text, "[1]") != (l.sgr == sgrReverse) {
			t.Errorf("this subagent only is not the highlighted default:\n%s", text)
		}
	}

	pressAll(m, t0, esc, char('r'))
	pressAll(m, t0, runes("too slow")...)
	if text = frameText(m.frame(100, 28, "parent", t0)); !strings.Contains(text, "reason > too slow█") {
		t.Errorf("reason frame:\n%s", text)
	}

	m.drain()
	if text = frameText(m.frame(100, 28, "parent", t0)); !strings.Contains(text, "serving session parent · no asks waiting · 1 answered") {
		t.Errorf("idle frame:\n%s", text)
	}
}

func TestFrameFits(t *testing.T) {
	long := testAsk("reviewer", strings.Repeat("x", 3000)+" tail", true)
	long.Request.Message = strings.Repeat("message line\n", 10)
	for _, size := range [][2]int{{120, 60}, {80, 24}, {80, 14}, {40, 10}, {20, 5}} {
		m := &machine{}
		m.push(newEntry(long), t0)
		m.push(newEntry(testAsk("b", "two", true)), t0)
		lines := m.frame(size[0], size[1], "parent", t0)
		if len(lines) > size[1] {
			t.Errorf("%v: %d lines", size, len(lines))
		}
		for _, l := range lines {
			if columns(l.text) > size[0] {
				t.Errorf("%v: line %q is %d wide", size, l.text, columns(l.text))
			}
		}
		text := frameText(lines)
		// The answers and the count survive any size that can hold them.
		if size[1] >= 10 && (!strings.Contains(text, "No, with a") || !strings.Contains(text, "1 more")) {
			t.Errorf("%v: the answers or the count were cut:\n%s", size, text)
		}
		// A long command shows its head and its tail, and says what is
		// between them and how to see it.
		if size[1] >= 14 && (!strings.Contains(text, "xxx tail") || !strings.Contains(text, "characters) · v shows the whole command⟧")) {
			t.Errorf("%v: the command's head and tail are not shown:\n%s", size, text)
		}
	}
}

func TestFrameArming(t *testing.T) {
	m := &machine{armDelay: DefaultArmDelay}
	m.push(newEntry(testAsk("a", "one", true)), t0)
	if text := frameText(m.frame(100, 30, "p", t0)); !strings.Contains(text, "keys count in a moment") {
		t.Errorf("unarmed footer:\n%s", text)
	}
	if text := frameText(m.frame(100, 30, "p", t0.Add(DefaultArmDelay))); !strings.Contains(text, "or press y s n r") {
		t.Errorf("armed footer:\n%s", text)
	}
}
