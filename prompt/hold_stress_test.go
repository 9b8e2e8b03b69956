package prompt

// Second-review stress test for the held-ask change (bb7a0b3): a real
// serve.Broker whose terminal is this prompt, with an operator typing,
// children giving up, children dying, the prompt timeout and shutdown all
// at once. Every ask must end exactly once and Run must return.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/serve"
	"github.com/seed6639df8c/courier/wire"
)

func TestHeldAsksStress(t *testing.T) {
	for round := range 4 {
		t.Run(fmt.Sprint(round), func(t *testing.T) { heldAsksStressRound(t, int64(round)) })
	}
}

func heldAsksStressRound(t *testing.T, seed int64) {
	const n = 240
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	dir := t.TempDir()
	layout := mailbox.Layout{Root: filepath.Join(dir, "mail")}
	cfg, err := rules.Load("")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{layout.Root}})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "review.jsonl")
	log, err := reviewlog.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	if err := layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}

	tty := newFakeTTY(120, 40)
	p := start(tty, Options{Session: "parent", ArmDelay: -1})
	defer p.Close()
	br := &serve.Broker{
		Layout: layout, Session: "parent", Policy: policy, Terminal: p, Log: log,
		SweepInterval: 10 * time.Millisecond, PromptTimeout: 300 * time.Millisecond,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- br.Run(ctx) }()

	dying := exec.Command("sleep", "60")
	if err := dying.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { dying.Process.Kill(); dying.Wait() }()

	// The operator answers now and then.
	stopTyping := make(chan struct{})
	var typing sync.WaitGroup
	typing.Add(1)
	go func() {
		defer typing.Done()
		keys := []string{"y", "n", "s", "1"}
		for {
			select {
			case <-stopTyping:
				return
			case <-time.After(3 * time.Millisecond):
			}
			tty.keys.Write([]byte(keys[rand.IntN(len(keys))]))
		}
	}()

	type dropped struct {
		req  wire.Request
		path string
		kind int // 0 stays, 1 child removes, 2 child dies
	}
	var all []dropped
	var removers sync.WaitGroup
	for i := range n {
		id, _ := forward.NewRequestID()
		req, err := forward.Ask{Session: "child", Agent: "Explore", Surface: "bash", Value: "make deploy", Cwd: "/w"}.Request(id, "parent", time.Now().UnixMilli())
		if err != nil {
			t.Fatal(err)
		}
		kind := i % 3
		req.RequesterPID = os.Getpid()
		if kind == 2 {
			req.RequesterPID = dying.Process.Pid
		}
		data, err := wire.EncodeRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := layout.WriteRequest("parent", id, data); err != nil {
			t.Fatal(err)
		}
		path, _ := layout.RequestPath("parent", id)
		all = append(all, dropped{req, path, kind})
		if kind == 1 {
			removers.Add(1)
			delay := time.Duration(rng.IntN(400)) * time.Millisecond
			go func() { defer removers.Done(); time.Sleep(delay); os.Remove(path) }()
		}
		if i%40 == 0 {
			time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		}
	}
	time.Sleep(time.Duration(100+rng.IntN(200)) * time.Millisecond)
	dying.Process.Kill()
	dying.Wait()
	time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("Run did not return within 30 s of the end of the session:\n%s", buf[:stackAll(buf)])
	}
	close(stopTyping)
	typing.Wait()
	removers.Wait()

	p.mu.Lock()
	left := p.m.held()
	p.mu.Unlock()
	if left != 0 {
		t.Errorf("%d asks still queued at the prompt after Run returned", left)
	}
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	answers := map[string]int{}
	gone := map[string]int{}
	reasons := map[string]int{}
	prompted := map[string]int{}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		id, _ := e["requestId"].(string)
		switch e["event"] {
		case reviewlog.ForwardedApproved, reviewlog.ForwardedDenied:
			answers[id]++
			r, _ := e["denialReason"].(string)
			if len(r) > 30 {
				r = r[:30]
			}
			reasons[fmt.Sprint(e["event"], " ", r)]++
		case reviewlog.ForwardedRequesterGone:
			gone[id]++
		case reviewlog.ForwardedPrompted:
			prompted[id]++
		}
	}
	t.Logf("outcomes: %v; gone: %d", reasons, len(gone))
	for _, d := range all {
		if _, err := os.Lstat(d.path); err == nil {
			t.Errorf("%s (kind %d): request still in the inbox after Run returned", d.req.ID, d.kind)
		}
		if answers[d.req.ID] > 1 {
			t.Errorf("%s (kind %d): answered %d times", d.req.ID, d.kind, answers[d.req.ID])
		}
		if d.kind == 0 && answers[d.req.ID] != 1 {
			t.Errorf("%s: a request whose child stayed was answered %d times", d.req.ID, answers[d.req.ID])
		}
		respPath, _ := layout.ResponsePath("parent", d.req.ID)
		_, rerr := os.Lstat(respPath)
		if d.kind == 0 && rerr != nil {
			t.Errorf("%s: no response file: %v", d.req.ID, rerr)
		}
		// A request its child removed before the broker read it is
		// neither answered nor logged; one that was prompted is one or
		// the other.
		if answers[d.req.ID] == 0 && gone[d.req.ID] == 0 && (d.kind != 1 || prompted[d.req.ID] > 0) {
			t.Errorf("%s (kind %d): neither answered nor logged as gone", d.req.ID, d.kind)
		}
	}
}

func stackAll(buf []byte) int { return runtime.Stack(buf, true) }
