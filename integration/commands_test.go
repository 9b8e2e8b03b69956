package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/seed6639df8c/courier/mailbox"
)

// waitLimit bounds every wait of the harness commands: long enough for a
// loaded 2-core CI machine, short enough that a hang fails the test.
const waitLimit = 30 * time.Second

// cmdDrop writes a request file the way a pi child does (a temp sibling,
// then rename), with @NOW@ replaced by the current time in ms, so a
// hand-written pi request is fresh: "drop SRC DIR".
func cmdDrop(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: drop SRC DIR")
	}
	data := strings.ReplaceAll(ts.ReadFile(args[0]), "@NOW@", strconv.FormatInt(time.Now().UnixMilli(), 10))
	writeAtomically(ts, filepath.Join(ts.MkAbs(args[1]), filepath.Base(args[0])), data)
}

// cmdDropMany writes N requests from a template whose @ID@ becomes
// perm-<prefix>-<n> (also the file name) and @NOW@ the time in ms:
// "dropmany N PREFIX TEMPLATE DIR".
func cmdDropMany(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: dropmany N PREFIX TEMPLATE DIR")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	tmpl := ts.ReadFile(args[2])
	for i := range n {
		id := fmt.Sprintf("perm-%s-%03d", args[1], i)
		data := strings.ReplaceAll(strings.ReplaceAll(tmpl, "@ID@", id), "@NOW@", strconv.FormatInt(time.Now().UnixMilli(), 10))
		writeAtomically(ts, filepath.Join(ts.MkAbs(args[3]), id+".json"), data)
	}
}

func writeAtomically(ts *testscript.TestScript, dest, data string) {
	ts.Check(os.MkdirAll(filepath.Dir(dest), 0o700))
	tmp := fmt.Sprintf("%s.%d.%d.tmp", dest, os.Getpid(), time.Now().UnixNano())
	ts.Check(os.WriteFile(tmp, []byte(data), 0o600))
	ts.Check(os.Rename(tmp, dest))
}

// cmdWaitFile waits for a file to exist: "waitfile PATH".
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile PATH")
	}
	path := ts.MkAbs(args[0])
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		ts.Fatalf("%v", err)
	}
	w, err := mailbox.WatchFile(ctx, path, mailbox.WatchOptions{})
	ts.Check(err)
	defer w.Close()
	if err := w.Wait(ctx); err != nil {
		ts.Fatalf("%s did not appear: %v", args[0], err)
	}
}

// cmdWaitCount waits until a directory holds exactly N *.json files:
// "waitcount DIR N". It re-lists on a short tick, with a deadline.
func cmdWaitCount(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitcount DIR N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	dir := ts.MkAbs(args[0])
	deadline := time.Now().Add(waitLimit)
	for {
		got := countMail(dir)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s holds %d mail files after %s, want %d", args[0], got, waitLimit, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdWaitGrep waits until a line of FILE matches REGEX: "waitgrep
// [-count=N] REGEX FILE"; with -count, until N lines match, and then
// asserts that no more do. A review-log entry is written after the
// response that a script may already have seen, so a plain grep there
// races the broker.
func cmdWaitGrep(ts *testscript.TestScript, neg bool, args []string) {
	want := 1
	exact := false
	if len(args) > 0 && strings.HasPrefix(args[0], "-count=") {
		n, err := strconv.Atoi(strings.TrimPrefix(args[0], "-count="))
		if err != nil || n < 1 {
			ts.Fatalf("waitgrep: bad %s: want -count=N with N >= 1", args[0])
		}
		want, exact, args = n, true, args[1:]
	}
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitgrep [-count=N] REGEX FILE")
	}
	re, err := regexp.Compile("(?m)" + args[0])
	ts.Check(err)
	path := ts.MkAbs(args[1])
	deadline := time.Now().Add(waitLimit)
	for {
		data, _ := os.ReadFile(path)
		if n := len(re.FindAllIndex(data, -1)); n >= want {
			if exact && n != want {
				ts.Fatalf("%d lines of %s matched %q, want %d", n, args[1], args[0], want)
			}
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("no %d line(s) of %s matched %q within %s", want, args[1], args[0], waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countMail(dir string) int {
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") {
			n++
		}
	}
	return n
}

// cmdAskMany runs N copies of a command concurrently (16 at a time) and
// asserts that every one exits 0: "askmany N prog args...".
func cmdAskMany(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: askmany N prog [args...]")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	prog, err := exec.LookPath(args[1])
	if err != nil {
		// PATH is the script's, not the test process's.
		for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
			if p := filepath.Join(dir, args[1]); fileExists(p) {
				prog = p
				break
			}
		}
	}
	env := os.Environ()
	for _, k := range []string{"PATH", "PI_CODING_AGENT_DIR", "HOME"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	var (
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
		slots    = make(chan struct{}, 16)
	)
	for i := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			cmd := exec.Command(prog, args[2:]...)
			cmd.Env = env
			cmd.Dir = ts.Getenv("WORK")
			if out, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("#%d: %v: %s", i, err, out))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Fprintf(ts.Stdout(), "%d of %d succeeded\n", n-len(failures), n)
	if len(failures) > 0 {
		ts.Fatalf("%d of %d failed; first: %s", len(failures), n, failures[0])
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
