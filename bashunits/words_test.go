package bashunits

import (
	"slices"
	"testing"
)

// TestSplitWords pins what a reader looking for paths sees of each unit:
// the words with quotes and escapes removed, expansions as written, the
// assignment values and redirection targets included, substitutions and
// here-document bodies left to units of their own.
func TestSplitWords(t *testing.T) {
	tests := []struct {
		line string
		want [][]string
	}{
		{`git status --short`, [][]string{{"git", "status", "--short"}}},
		{`cp x /home/ada/.pi/'agent'/settings.json`, [][]string{{"cp", "x", "/home/ada/.pi/agent/settings.json"}}},
		{`cp x "$HOME"/.pi/agent`, [][]string{{"cp", "x", Mark + "$HOME" + Mark + "/.pi/agent"}}},
		{`cp x ${PI_CODING_AGENT_DIR}/a`, [][]string{{"cp", "x", Mark + "${PI_CODING_AGENT_DIR}" + Mark + "/a"}}},
		// The review's finding 1: ANSI-C and locale quotes are literal text.
		{`cp x ~/.pi/$'agent'/a`, [][]string{{"cp", "x", "~/.pi/agent/a"}}},
		{`cp x ~/.pi/$'\x61'gent/$'\141'`, [][]string{{"cp", "x", "~/.pi/agent/a"}}},
		{`cp x ~/.pi/$"agent"/a`, [][]string{{"cp", "x", "~/.pi/agent/a"}}},
		{`cp x ~/.pi/$'a\0gent'`, [][]string{{"cp", "x", "~/.pi/a"}}},
		{`cp x ~/.pi/agen$'\u0074'/"$a"`, [][]string{{"cp", "x", "~/.pi/agent/" + Mark + "$a" + Mark}}},
		{"cp x ~/.pi/agen`true`t", [][]string{{"cp", "x", "~/.pi/agen" + Mark + "`true`" + Mark + "t"}, {"true"}}},
		{`cp x a\ b`, [][]string{{"cp", "x", "a b"}}},
		{`dd if=x of=~/y`, [][]string{{"dd", "if=x", "of=~/y"}}},
		{`D=~/.pi; cp x $D/a`, [][]string{{"~/.pi"}, {"cp", "x", Mark + "$D" + Mark + "/a"}}},
		{`echo {} > ~/a 2>>"b c"`, [][]string{{"echo", "{}", "~/a", "b c"}}},
		{`{ ls; } > ~/out`, [][]string{{"ls"}, {"~/out"}}},
		{`echo $(cp x /y) z`, [][]string{{"echo", Mark + "$(cp x /y)" + Mark, "z"}, {"cp", "x", "/y"}}},
		{"cat <<EOF > /out\n/not/a/word\nEOF", [][]string{{"cat", "/out"}}},
		{`export A=/p B`, [][]string{{"/p"}}},
		{`echo ${x:-/default}`, [][]string{{"echo", Mark + "${x:-/default}" + Mark, "/default"}}},
		{`git status "unterminated`, [][]string{{"git", "status", "unterminated"}}},
	}
	for _, tc := range tests {
		units := Split(tc.line)
		var got [][]string
		for _, u := range units {
			got = append(got, u.Words)
		}
		if !slices.EqualFunc(got, tc.want, slices.Equal) {
			t.Errorf("Split(%q) words %q, want %q", tc.line, got, tc.want)
		}
	}
}

func TestSplitName(t *testing.T) {
	tests := []struct{ line, want string }{
		{`git status`, "git"},
		{`FOO=1 'rm' -rf x`, "rm"},
		{`"$CMD" x`, "$CMD"},
		{`> out`, ""},
		{`export A=1`, ""},
		{`/bin/mv a b`, "/bin/mv"},
	}
	for _, tc := range tests {
		if got := Split(tc.line)[0].Name; got != tc.want {
			t.Errorf("Split(%q).Name = %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestSplitArgsTargets: the command's own words, and where its
// redirections write, kept apart for the self-approval guard.
func TestSplitArgsTargets(t *testing.T) {
	tests := []struct {
		line          string
		args, targets []string
	}{
		{`git status`, []string{"git", "status"}, nil},
		{`A=1 cp "x" $d > out 2>&1 >> "$log"`, []string{"cp", "x", Mark + "$d" + Mark}, []string{"out", Mark + "$log" + Mark}},
		{`> f`, nil, []string{"f"}},
		{`echo x >/dev/null`, []string{"echo", "x"}, nil},
	}
	for _, tc := range tests {
		u := Split(tc.line)[0]
		if !slices.Equal(u.Args, tc.args) || !slices.Equal(u.Targets, tc.targets) {
			t.Errorf("Split(%q): args %q targets %q, want %q %q", tc.line, u.Args, u.Targets, tc.args, tc.targets)
		}
	}
}
