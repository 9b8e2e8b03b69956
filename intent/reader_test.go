package intent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// piLine is an entry of a pi session file.
func piLine(id, parent, role, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	quoted, _ := json.Marshal(text)
	content := string(quoted)
	if role == RoleAssistant {
		content = fmt.Sprintf(`[{"type":"text","text":%s}]`, quoted)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-12-01T10:00:00.000Z","message":{"role":%q,"content":%s}}`+"\n", id, p, role, content)
}

const piHeader = `{"type":"session","version":3,"id":"7f3c0d8e-1111-4222-8333-944455556666","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/w"}` + "\n"

func write(t *testing.T, path, data string, flag int) {
	t.Helper()
	f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, data string) { write(t, path, data, os.O_APPEND) }

func texts(items []Item) string {
	var s []string
	for _, it := range items {
		s = append(s, it.Text)
	}
	return strings.Join(s, "|")
}

func open(t *testing.T, path string, opts Options) *Reader {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestIncremental drives one transcript through appends, a partial line,
// truncation and replacement, checking after each step what a Snapshot
// returns and how far the Reader has read.
func TestIncremental(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "session.jsonl")
	r := open(t, path, Options{Format: FormatPi})

	if got := r.Snapshot(); got != nil {
		t.Fatalf("missing file: %q, want nothing", texts(got))
	}
	if st := r.Stats(); st.Err == nil {
		t.Fatalf("missing file: no error in stats %+v", st)
	}

	first := piHeader + piLine("a1", "", RoleUser, "one") + piLine("a2", "a1", RoleAssistant, "two")
	write(t, path, first, os.O_TRUNC)
	if got := texts(r.Snapshot()); got != "one|two" {
		t.Fatalf("after the first lines: %q", got)
	}
	if st := r.Stats(); st.Offset != int64(len(first)) || st.Lines != 3 || !st.CaughtUp {
		t.Fatalf("stats %+v, want offset %d, 3 lines, caught up", st, len(first))
	}

	// A line whose newline is not written yet waits for it.
	third := piLine("a3", "a2", RoleUser, "three")
	appendTo(t, path, third[:20])
	if got := texts(r.Snapshot()); got != "one|two" {
		t.Fatalf("with a partial line: %q", got)
	}
	appendTo(t, path, third[20:])
	if got := texts(r.Snapshot()); got != "one|two|three" {
		t.Fatalf("once the line ends: %q", got)
	}
	// Only the appended bytes were read: a line read twice would have
	// counted twice.
	if st := r.Stats(); st.Lines != 4 {
		t.Fatalf("lines read %d, want 4: a line was read again", st.Lines)
	}

	// Truncated and rewritten shorter: a new transcript.
	short := piHeader + piLine("b1", "", RoleUser, "fresh")
	write(t, path, short, os.O_TRUNC)
	if got := texts(r.Snapshot()); got != "fresh" {
		t.Fatalf("after truncation: %q", got)
	}

	// Replaced by another file, longer than what was read: another inode.
	other := filepath.Join(dir, "other.jsonl")
	write(t, other, piHeader+piLine("c1", "", RoleUser, "replaced")+piLine("c2", "c1", RoleAssistant, strings.Repeat("x", len(short))), os.O_TRUNC)
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if got := texts(r.Snapshot()); !strings.HasPrefix(got, "replaced|x") {
		t.Fatalf("after replacement: %q", got)
	}

	// Removed: nothing, until it is back.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot(); got != nil {
		t.Fatalf("removed: %q", texts(got))
	}
}

// TestHugeLine: a line over MaxLine is skipped whole, the lines around it
// are read, and the entry after it (its child) still reaches the
// conversation before it.
func TestHugeLine(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split=%v", split), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			huge := piLine("h1", "a1", RoleUser, "HUGE"+strings.Repeat("y", MaxLine))
			write(t, path, piHeader+piLine("a1", "", RoleUser, "before"), os.O_TRUNC)
			r := open(t, path, Options{Format: FormatPi, MaxRead: 1 << 30})
			r.Snapshot()
			if split {
				// Its first part read by one Snapshot, the rest by the next.
				appendTo(t, path, huge[:MaxLine/2])
				r.Snapshot()
				appendTo(t, path, huge[MaxLine/2:])
			} else {
				appendTo(t, path, huge)
			}
			appendTo(t, path, piLine("a2", "h1", RoleAssistant, "after"))
			got := r.Snapshot()
			if texts(got) != "before|after" {
				t.Fatalf("conversation %q, want before|after", texts(got))
			}
			if st := r.Stats(); st.Skipped != 1 {
				t.Fatalf("skipped %d lines, want 1", st.Skipped)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	line := func(id, parent, text string) string { return piLine(id, parent, RoleUser, text) }
	long := strings.Repeat("é", 400) + "END" // 803 bytes
	write(t, path, piHeader+
		line("a1", "", strings.Repeat("a", 100))+
		line("a2", "a1", strings.Repeat("b", 200))+
		line("a3", "a2", strings.Repeat("c", 100)), os.O_TRUNC)

	tests := []struct {
		name   string
		budget int
		extra  string
		want   string
	}{
		{"all fit", 400, "", strings.Repeat("a", 100) + "|" + strings.Repeat("b", 200) + "|" + strings.Repeat("c", 100)},
		{"oldest cut whole", 399, "", strings.Repeat("b", 200) + "|" + strings.Repeat("c", 100)},
		{"newest only", 299, "", strings.Repeat("c", 100)},
		{"newest larger than the budget", 300, line("a4", "a3", long), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "s.jsonl")
			data, _ := os.ReadFile(path)
			write(t, p, string(data)+tt.extra, os.O_TRUNC)
			items := open(t, p, Options{Budget: tt.budget}).Snapshot()
			assertClean(t, items, tt.budget)
			if tt.want != "" {
				if got := texts(items); got != tt.want {
					t.Fatalf("got %q\nwant %q", got, tt.want)
				}
				return
			}
			if len(items) != 1 || !strings.HasPrefix(items[0].Text, CutMark) || !strings.HasSuffix(items[0].Text, "END") || len(items[0].Text) > tt.budget {
				t.Fatalf("got %q, want the end of the long item, marked, within %d bytes", texts(items), tt.budget)
			}
		})
	}
}

// TestBoundedRead: a Snapshot reads at most MaxRead bytes, and says
// nothing until it has read the whole file.
func TestBoundedRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	var b strings.Builder
	b.WriteString(piHeader)
	parent := ""
	for i := range 50 {
		id := fmt.Sprintf("n%d", i)
		b.WriteString(piLine(id, parent, RoleUser, fmt.Sprintf("turn %d", i)))
		parent = id
	}
	write(t, path, b.String(), os.O_TRUNC)
	r := open(t, path, Options{MaxRead: 1000})
	calls := 0
	for {
		calls++
		got := r.Snapshot()
		st := r.Stats()
		if st.Offset > int64(1000*calls) {
			t.Fatalf("read %d bytes in %d calls of at most 1000", st.Offset, calls)
		}
		if !st.CaughtUp {
			if got != nil {
				t.Fatalf("call %d, behind: %q, want nothing", calls, texts(got))
			}
			continue
		}
		if !strings.HasSuffix(texts(got), "turn 48|turn 49") {
			t.Fatalf("caught up: %q", texts(got))
		}
		break
	}
	if want := (b.Len() + 999) / 1000; calls != want {
		t.Fatalf("%d calls, want %d", calls, want)
	}
}

// TestWindow: a file larger than the window is read from its end, from
// the first whole line in the window.
func TestWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	var b strings.Builder
	b.WriteString(piHeader)
	parent := ""
	for i := range 200 {
		id := fmt.Sprintf("n%d", i)
		b.WriteString(piLine(id, parent, RoleUser, fmt.Sprintf("turn %d", i)))
		parent = id
	}
	write(t, path, b.String(), os.O_TRUNC)
	r := open(t, path, Options{Window: 2000})
	got := r.Snapshot()
	st := r.Stats()
	if st.Skipped != 0 || !st.CaughtUp {
		t.Fatalf("stats %+v: the partial line the window starts in is no skipped line", st)
	}
	if len(got) == 0 || got[len(got)-1].Text != "turn 199" || strings.Contains(texts(got), "turn 1|") {
		t.Fatalf("conversation %q, want the last turns only", texts(got))
	}
	if st.Lines > 2000/100+1 {
		t.Fatalf("read %d lines from a window of 2000 bytes", st.Lines)
	}
}

// TestNotRegular: a FIFO is refused at Open and never blocks a Snapshot
// when it appears later; a symbolic link is not followed.
func TestNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := Open(fifo, Options{}); err == nil {
		t.Fatal("Open of a FIFO: no error")
	}
	if _, err := Open(dir, Options{}); err == nil {
		t.Fatal("Open of a directory: no error")
	}

	later := filepath.Join(dir, "later")
	r := open(t, later, Options{})
	if err := syscall.Mkfifo(later, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := r.Snapshot(); got != nil || r.Stats().Err == nil {
		t.Fatalf("FIFO: %q, err %v", texts(got), r.Stats().Err)
	}

	real := filepath.Join(dir, "real.jsonl")
	write(t, real, piHeader+piLine("a1", "", RoleUser, "hello"), os.O_TRUNC)
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, Options{}); err == nil {
		t.Fatal("Open of a symbolic link: no error")
	}
}

func TestOpenOptions(t *testing.T) {
	for _, opts := range []Options{
		{Format: "markdown"},
		{Budget: 10},
		{Budget: -1},
		{MaxRead: -1},
		{Window: -5},
	} {
		if _, err := Open("x.jsonl", opts); err == nil {
			t.Errorf("Open with %+v: no error", opts)
		}
	}
	if _, err := Open("", Options{}); err == nil {
		t.Error("Open without a path: no error")
	}
}
