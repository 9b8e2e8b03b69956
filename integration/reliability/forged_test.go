package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// forgedAnswers is point 5 (H9): answers planted before the broker
// answers, copied from another request, or written by a second writer
// racing the broker. A child never accepts one, and the broker's own
// answer (here a rule's deny) is never stopped by one.
func (s *suite) forgedAnswers(t *testing.T) {
	racers := s.scale(30, 400)
	r := s.newRig(t)
	r.keepInbox()
	b := r.broker(filepath.Join(r.base, "review.jsonl"))
	r.serving(b)

	// A real, bound approval of another request, to copy: a request
	// dropped without a child, so its answer stays.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r.writeRequest("perm-other", askAllow, 0)
	otherPath := filepath.Join(r.dir("responses"), "perm-other.json")
	var copied []byte
	r.waitFor("the approval to copy", func() bool {
		data, err := os.ReadFile(otherPath)
		copied = data
		return err == nil
	})
	if !strings.Contains(string(copied), `"approved":true`) {
		t.Fatalf("the approval to copy: %s", copied)
	}
	approve := func(bind func(wire.Response) wire.Response) func(*rig, string) error {
		return func(r *rig, id string) error {
			data, _ := wire.EncodeResponse(bind(wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: "parent", RespondedAt: time.Now().UnixMilli()}))
			return publish(r, id, data)
		}
	}
	plants := []struct {
		name  string
		plant func(*rig, string) error
	}{
		{"unbound approval", approve(func(r wire.Response) wire.Response { return r })},
		{"approval copied from another request", func(r *rig, id string) error { return publish(r, id, copied) }},
		{"approval bound to other request bytes", func(r *rig, id string) error {
			return approve(func(resp wire.Response) wire.Response {
				return resp.Bind(id, wire.RequestDigest([]byte("npm install, but not this request")))
			})(r, id)
		}},
		{"garbage", func(r *rig, id string) error { return publish(r, id, []byte(`{"approved":tr`)) }},
		{"symlink to an approval", func(r *rig, id string) error {
			target := filepath.Join(r.base, "approval.json")
			os.WriteFile(target, copied, 0o600)
			return os.Symlink(target, filepath.Join(r.dir("responses"), id+".json"))
		}},
		{"FIFO", func(r *rig, id string) error {
			return unix.Mkfifo(filepath.Join(r.dir("responses"), id+".json"), 0o600)
		}},
	}

	// A. Planted before the broker answers (the broker is stopped until
	// the child has refused the plant), then the broker's own answer.
	accepted, refusedFirst := 0, 0
	for _, p := range plants {
		b.freeze(t)
		child := r.startAsk("victim", askDeny)
		id := r.requestOf(child.pid())
		if err := p.plant(r, id); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		r.waitFor("the child's refusal of the "+p.name, func() bool {
			if child.exited() {
				t.Fatalf("%s: the child ended before the broker answered: %v\n%s", p.name, child.err, child.stderr)
			}
			return child.stderr.Contains("refused")
		})
		refusedFirst++
		b.signal(syscall.SIGCONT)
		r.waitFor("the child's end", child.exited)
		if code := child.cmd.ProcessState.ExitCode(); code != 1 {
			accepted++
			t.Errorf("%s: child exited %d, want 1 (the broker's deny)\n%s", p.name, code, child.stderr)
		}
	}
	r.waitFor("the broker's report of answering over a plant", func() bool {
		return b.stderr.Contains("which does not answer it")
	})

	// B. A second writer racing the broker: every new request gets
	// forged answers, before or after the broker's (which it may then
	// replace on disk). The child takes the broker's deny, or refuses
	// and reports "unavailable"; never an approval.
	var forged atomic.Int64
	forger := newWatcher(t)
	if err := forger.Add(r.dir("requests")); err != nil {
		t.Fatal(err)
	}
	var forging sync.WaitGroup
	forging.Add(1)
	go func() {
		defer forging.Done()
		for ev := range forger.Events {
			name := filepath.Base(ev.Name)
			if !ev.Has(fsnotify.Create) || !mailbox.IsMailName(name) {
				continue
			}
			id := strings.TrimSuffix(name, ".json")
			for i := range 3 {
				if plants[i%2].plant(r, id) == nil {
					forged.Add(1)
				}
			}
		}
	}()
	stopForger := func() { forger.Close(); forging.Wait() }
	var (
		wg                  sync.WaitGroup
		denied, unavailable atomic.Int64
		approved            atomic.Int64
		mu                  sync.Mutex
		firstApproved       string
		slots               = make(chan struct{}, 8)
	)
	for i := range racers {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			a := r.ask(ctx, fmt.Sprintf("racer%d", i), askDeny)
			switch {
			case a.out.Approved || a.code == 0:
				approved.Add(1)
				mu.Lock()
				firstApproved = fmt.Sprintf("%+v %s", a.out, a.stderr)
				mu.Unlock()
			case expected(a):
				denied.Add(1)
			case a.code == 3:
				unavailable.Add(1)
			default:
				t.Errorf("racer: exit %d %+v %s", a.code, a.out, a.stderr)
			}
		}()
	}
	wg.Wait()
	stopForger()
	b.stop(t)
	figures(t, "planted_before_answer", len(plants), "refused_then_answered", refusedFirst-accepted, "racing_asks", racers,
		"forged_writes", forged.Load(), "forged_accepted", accepted+int(approved.Load()),
		"racers_denied_by_broker", denied.Load(), "racers_refused_unavailable", unavailable.Load())
	if approved.Load() > 0 {
		t.Errorf("%d racers took a forged approval, e.g. %s", approved.Load(), firstApproved)
	}
}

// publish renames data into responses/<id>.json, as a writer in the same
// uid would.
func publish(r *rig, id string, data []byte) error {
	tmp := filepath.Join(r.base, fmt.Sprintf(".forged-%s-%d", id, time.Now().UnixNano()))
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(r.dir("responses"), id+".json"))
}
