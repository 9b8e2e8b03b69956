package notify

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		problem string
	}{
		{in: "notify-phone", want: []string{"notify-phone"}},
		{in: "  ntfy  publish\tcourier-asks ", want: []string{"ntfy", "publish", "courier-asks"}},
		{in: `sh -c 'curl -d "$COURIER_ASK_SUMMARY" ntfy.sh/x'`, want: []string{"sh", "-c", `curl -d "$COURIER_ASK_SUMMARY" ntfy.sh/x`}},
		{in: `say "an ask \"waits\"" it\ is`, want: []string{"say", `an ask "waits"`, "it is"}},
		{in: `a'b'"c"d`, want: []string{"abcd"}},
		// The README's example.
		{in: `sh -c "ntfy publish my-asks \"\$COURIER_ASK_SUMMARY\""`, want: []string{"sh", "-c", `ntfy publish my-asks "$COURIER_ASK_SUMMARY"`}},
		{in: `x ''`, want: []string{"x", ""}},
		{in: "a b#c", want: []string{"a", "b#c"}},
		{in: "", problem: "no program"},
		{in: "''", problem: "no program"},
		{in: "notify | mail", problem: `'|' at column 8 is shell syntax`},
		{in: "notify; rm -rf /", problem: `';' at column 7`},
		{in: "notify > /tmp/x", problem: `'>'`},
		{in: "notify $COURIER_ASK_SUMMARY", problem: `'$' at column 8`},
		{in: `notify "$COURIER_ASK_SUMMARY"`, problem: "inside double quotes"},
		{in: "notify `id`", problem: "'`'"},
		{in: "notify *.txt", problem: `'*'`},
		{in: "~/bin/notify", problem: `'~' at column 1`},
		{in: "notify #comment", problem: `'#' at column 8`},
		{in: "X=1 notify", problem: "variable assignment"},
		{in: "notify 'open", problem: "not closed"},
		{in: `notify "open`, problem: "not closed"},
		{in: `notify \`, problem: "backslash"},
	}
	for _, tt := range tests {
		got, err := ParseCommand(tt.in)
		if tt.problem != "" {
			if err == nil || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("ParseCommand(%q) = %q, %v; want an error with %q", tt.in, got, err, tt.problem)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseCommand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestClean(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"a\x1b]0;t\x07b", 0, `a\u001b]0;t\u0007b`},
		{"\u009c\u202e\u2028\n", 0, `\u009c\u202e\u2028\u000a`},
		{"bad\xffutf8", 0, "bad\uFFFDutf8"},
		{"abcdef", 4, "abc…"},
		{"abcd", 4, "abcd"},
	}
	for _, tt := range tests {
		if got := clean(tt.in, tt.max); got != tt.want {
			t.Errorf("clean(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// recorder is a sink's delivery that hands each batch to the test.
type recorder struct {
	batches chan Batch
	release chan struct{}
}

func newRecorder() *recorder {
	return &recorder{batches: make(chan Batch, 100), release: make(chan struct{})}
}

func (r *recorder) next(t *testing.T) Batch {
	t.Helper()
	select {
	case b := <-r.batches:
		return b
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
		return Batch{}
	}
}

// A flood makes one notification per interval, each counting the asks
// since the last, the newest named; Ask never waits for a delivery.
func TestCoalesced(t *testing.T) {
	rec := newRecorder()
	n, err := Start(Options{Terminal: func(b Batch) { rec.batches <- b }, Interval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	n.Ask(Note{Summary: "first"})
	if b := rec.next(t); b.Count != 1 || b.Text() != "first" {
		t.Fatalf("first batch %+v", b)
	}
	for i := range 1000 {
		n.Ask(Note{Summary: "ask " + string(rune('a'+i%26)), Waiting: i + 2})
	}
	b := rec.next(t)
	if b.Count != 1000 || b.Last.Waiting != 1001 || !strings.HasPrefix(b.Text(), "1000 new asks; the last: ask ") {
		t.Fatalf("second batch %+v %q", b, b.Text())
	}
	select {
	case b := <-rec.batches:
		t.Fatalf("a third notification for no ask: %+v", b)
	case <-time.After(300 * time.Millisecond):
	}
}

// A sink stuck delivering holds one pending batch, whatever arrives.
func TestAskNeverBlocks(t *testing.T) {
	rec := newRecorder()
	n, err := Start(Options{Terminal: func(b Batch) { rec.batches <- b; <-rec.release }, Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n.Ask(Note{Summary: "stuck"})
	rec.next(t)
	for range 100_000 {
		n.Ask(Note{Summary: "flood"})
	}
	close(rec.release)
	if b := rec.next(t); b.Count != 100_000 {
		t.Fatalf("batch after the stuck one counts %d", b.Count)
	}
	n.Stop()
}

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitFile waits for a file a command writes and returns its content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "END\n") {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was never written", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The operator's command gets the ask in its environment, never in its
// words; a hostile agent name reaches no shell and no terminal raw.
func TestCommandEnvironment(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "env")
	t.Setenv("NOTIFY_OUT", out)
	script := writeScript(t, dir, "notify.sh", `env | grep '^COURIER_' | sort > "$NOTIFY_OUT.tmp"; echo END >> "$NOTIFY_OUT.tmp"; mv "$NOTIFY_OUT.tmp" "$NOTIFY_OUT"`)
	n, err := Start(Options{Command: "'" + script + "' --flag", Serving: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	hostile := "x$(touch " + filepath.Join(dir, "pwned") + ")`id`;\x1b]0;t\x07\u202e\n"
	n.Ask(Note{ID: "perm-1", Agent: hostile, Session: "child-1", Surface: "bash", Summary: "'" + hostile + "' asks bash: ls", Waiting: 3})
	got := waitFile(t, out)
	for _, want := range []string{
		"COURIER_ASK_ID=perm-1\n",
		"COURIER_ASK_AGENT=x$(touch " + filepath.Join(dir, "pwned") + ")`id`;\\u001b]0;t\\u0007\\u202e\\u000a\n",
		"COURIER_ASK_SESSION=child-1\n",
		"COURIER_ASK_SURFACE=bash\n",
		"COURIER_ASK_COUNT=1\n",
		"COURIER_ASKS_WAITING=3\n",
		"COURIER_SERVING_SESSION=parent\n",
		"COURIER_ASK_SUMMARY='x$(touch ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the environment lacks %q:\n%s", want, got)
		}
	}
	if strings.ContainsAny(got, "\x1b\x07") {
		t.Errorf("a raw control reached the command:\n%q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("the agent name was run by a shell")
	}
}

// A command that hangs is killed at its timeout; its failures are
// reported once; Stop kills one still running and leaves no goroutine.
func TestCommandTimeoutAndFailures(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	dir := t.TempDir()
	script := writeScript(t, dir, "hang.sh", "sleep 30 & wait\n")
	var mu sync.Mutex
	var reported []error
	errs := make(chan struct{}, 10)
	before := runtime.NumGoroutine()
	n, err := Start(Options{Command: script, Timeout: 100 * time.Millisecond, Interval: time.Millisecond, OnError: func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
		errs <- struct{}{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n.Ask(Note{Summary: "one"})
	select {
	case <-errs:
	case <-time.After(5 * time.Second):
		t.Fatal("the hanging command was never reported")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the timeout took %s", took)
	}
	n.Ask(Note{Summary: "two"})
	n.Ask(Note{Summary: "three"})
	// The second delivery hangs too; Stop kills it.
	stopped := make(chan struct{})
	go func() { n.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || !strings.Contains(reported[0].Error(), "did not finish within 100ms") ||
		!strings.Contains(reported[0].Error(), "later failures of it are not reported") {
		t.Errorf("reported %v", reported)
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if runtime.NumGoroutine() > before {
		t.Errorf("%d goroutines left (was %d)", runtime.NumGoroutine(), before)
	}
}

func TestCommandFailureReported(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	dir := t.TempDir()
	script := writeScript(t, dir, "fail.sh", "echo 'no route to \x1b[31mphone' >&2; exit 3\n")
	errs := make(chan error, 10)
	n, err := Start(Options{Command: script, Interval: time.Millisecond, OnError: func(err error) { errs <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	n.Ask(Note{Summary: "one"})
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "exit status 3: no route to \\u001b[31mphone") {
			t.Errorf("reported %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the failure was never reported")
	}
}

func TestStartRefusesABadCommand(t *testing.T) {
	for _, cmd := range []string{"notify | mail", "no-such-program-courier-test"} {
		if _, err := Start(Options{Command: cmd}); err == nil || !strings.Contains(err.Error(), "--notify-cmd") {
			t.Errorf("Start(%q): %v", cmd, err)
		}
		if err := CheckCommand(cmd); err == nil || !strings.Contains(err.Error(), "--notify-cmd") {
			t.Errorf("CheckCommand(%q): %v", cmd, err)
		}
	}
	if err := CheckCommand("  "); err != nil {
		t.Errorf("a blank command: %v", err)
	}
	if err := CheckCommand("sh -c 'true'"); err != nil {
		t.Errorf("sh -c: %v", err)
	}
}

// notify-send runs only with a session bus, with the ask escaped for the
// notification server's markup.
func TestDesktop(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "args")
	t.Setenv("NOTIFY_OUT", out)
	writeScript(t, dir, "notify-send", `for a in "$@"; do printf '%s\n' "$a"; done > "$NOTIFY_OUT.tmp"; echo END >> "$NOTIFY_OUT.tmp"; mv "$NOTIFY_OUT.tmp" "$NOTIFY_OUT"`)
	look := func(name string) (string, error) {
		if name == "notify-send" {
			return filepath.Join(dir, name), nil
		}
		return "", errors.New("not found")
	}
	env := func(bus string) func(string) string {
		return func(k string) string {
			if k == "DBUS_SESSION_BUS_ADDRESS" {
				return bus
			}
			return ""
		}
	}
	n, err := Start(Options{Desktop: true, Getenv: env(""), LookPath: look})
	if err != nil {
		t.Fatal(err)
	}
	if s := n.Sinks(); len(s) != 0 {
		t.Errorf("sinks without a session bus: %q", s)
	}
	n.Stop()
	n, err = Start(Options{Desktop: true, Getenv: env("unix:path=/run/bus"), LookPath: look})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	n.Ask(Note{Summary: "'<b>x</b>&' asks bash: ls"})
	want := "--app-name=courier\n--\ncourier: a permission ask is waiting\n'&lt;b&gt;x&lt;/b&gt;&amp;' asks bash: ls\nEND\n"
	if got := waitFile(t, out); got != want {
		t.Errorf("notify-send got\n%s\nwant\n%s", got, want)
	}
}

func TestTerminalAlert(t *testing.T) {
	hostile := Note{Summary: "'x\x1b\\\x07\u009c;y' asks bash: ls"}.cleaned()
	tests := []struct {
		name string
		env  map[string]string
		b    Batch
		want string
	}{
		{"xterm", map[string]string{"TERM": "xterm-256color"}, Batch{1, Note{Summary: "'a' asks bash: ls"}},
			"\a\x1b]9;courier: 'a' asks bash: ls\a"},
		{"several", map[string]string{"TERM": "xterm"}, Batch{3, Note{Summary: "'a' asks bash: ls"}},
			"\a\x1b]9;courier: 3 new asks; the last: 'a' asks bash: ls\a"},
		{"vte", map[string]string{"TERM": "xterm-256color", "VTE_VERSION": "7600"}, Batch{1, Note{Summary: "'a;b' asks"}},
			"\a\x1b]777;notify;courier: a permission ask;'a,b' asks\a"},
		{"tmux", map[string]string{"TERM": "screen", "TMUX": "/tmp/tmux-1/default,1,0"}, Batch{1, Note{Summary: "s"}},
			"\a\x1bPtmux;\x1b\x1b]9;courier: s\a\x1b\\"},
		{"console", map[string]string{"TERM": "linux"}, Batch{1, Note{Summary: "s"}}, "\a"},
		{"no TERM", map[string]string{}, Batch{1, Note{Summary: "s"}}, "\a"},
		{"override", map[string]string{"TERM": "linux", OSCEnv: "777"}, Batch{1, Note{Summary: "s"}},
			"\a\x1b]777;notify;courier: a permission ask;s\a"},
		{"off", map[string]string{"TERM": "xterm", OSCEnv: "none"}, Batch{1, Note{Summary: "s"}}, "\a"},
		{"hostile", map[string]string{"TERM": "xterm"}, Batch{1, hostile},
			"\a\x1b]9;courier: 'x\\u001b\\\\u0007\\u009c;y' asks bash: ls\a"},
	}
	for _, tt := range tests {
		got := TerminalAlert(tt.b, func(k string) string { return tt.env[k] })
		if got != tt.want {
			t.Errorf("%s: TerminalAlert = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Stop with nothing running returns, and a stopped notifier ignores asks.
func TestStopIdle(t *testing.T) {
	n, err := Start(Options{Terminal: func(Batch) {}})
	if err != nil {
		t.Fatal(err)
	}
	n.Stop()
	n.Stop()
	n.Ask(Note{Summary: "late"})
	var none *Notifier
	none.Ask(Note{})
	none.Stop()
}
