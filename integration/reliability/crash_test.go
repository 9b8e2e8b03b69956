package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// brokerKills is point 1 (T2): children ask continuously while the broker
// is SIGKILLed at random moments (during start, the initial scan, reads,
// response writes, removals) and restarted on the same mailbox. Every ask
// is answered exactly once with the answer its rules give, or abandoned
// by its child; no response is partial; no request is stranded.
func (s *suite) brokerKills(t *testing.T) {
	kills := s.scale(12, 240)
	workers := s.scale(6, 12)
	maxLife := time.Duration(s.scale(150, 300)) * time.Millisecond
	r := s.newRig(t)
	r.keepInbox()
	obs := observeResponses(t, r.dir("responses"))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
		asking  = make(chan struct{})
	)
	values := []string{askAllow, askDeny, askHuman}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-asking:
					return
				default:
				}
				a := r.ask(ctx, fmt.Sprintf("w%d", w), values[(w+i)%len(values)])
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		}()
	}

	var logs []string
	start := time.Now()
	for k := range kills {
		log := filepath.Join(r.base, fmt.Sprintf("review-%03d.jsonl", k))
		logs = append(logs, log)
		b := r.broker(log)
		pause(jitter(maxLife))
		b.kill()
	}
	killing := time.Since(start)
	final := filepath.Join(r.base, "review-final.jsonl")
	logs = append(logs, final)
	b := r.broker(final)
	r.serving(b)
	close(asking)
	wg.Wait()
	b.stop(t)

	var lost, gaveUp []string
	answered := map[string]bool{}
	var longest time.Duration
	for _, a := range answers {
		longest = max(longest, a.took)
		switch {
		case expected(a):
			answered[a.out.RequestID+".json"] = true
		case abandoned(a):
			gaveUp = append(gaveUp, a.out.RequestID)
		default:
			lost = append(lost, fmt.Sprintf("%q exit %d: %+v %s", a.value, a.code, a.out, a.stderr))
		}
	}
	twice := obs.twice()
	for id, n := range terminalEntries(t, logs...) {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s logged %d times", id, n))
		}
	}
	names, _ := readNames(r.dir("requests"))
	var stranded []string
	for _, n := range names {
		if mailbox.IsMailName(n) {
			stranded = append(stranded, "request "+n)
		}
	}
	names, _ = readNames(r.dir("responses"))
	for _, n := range names {
		if answered[n] {
			stranded = append(stranded, "response "+n)
		}
	}
	temps, _ := readNames(r.layout.TempDir())
	figures(t, "kills", kills, "asks", len(answers), "answered", len(answered), "abandoned", len(gaveUp),
		"lost", len(lost), "twice", len(twice), "partial", len(obs.bad), "stranded", len(stranded),
		"temp_leftovers", len(temps), "longest_ask", ms(longest), "killing_for", killing.Round(time.Millisecond))
	if len(lost) > 0 {
		t.Errorf("%d asks lost, e.g. %s", len(lost), lost[0])
	}
	if len(twice) > 0 {
		t.Errorf("answered twice: %v", twice)
	}
	if len(obs.bad) > 0 {
		t.Errorf("partial or unreadable responses: %v", obs.bad)
	}
	if len(obs.problems) > 0 {
		t.Errorf("the response observer lost events: %v", obs.problems)
	}
	if len(stranded) > 0 {
		t.Errorf("stranded: %v", stranded)
	}
	if len(temps) > kills {
		t.Errorf("%d temp files left by %d kills", len(temps), kills)
	}
}

// childKills is point 2: children SIGKILLed while they wait. Their
// requests are swept, and no prompt for a dead child stays up or appears:
// the human here is an upper session the broker relays to (--terminal
// relay), whose inbox is what would be on screen.
func (s *suite) childKills(t *testing.T) {
	n := s.scale(10, 40)
	rounds := s.scale(2, 20)
	r := s.newRig(t)
	r.keepInbox()
	// The upper session is served by this test: a heartbeat, never an answer.
	if err := r.layout.EnsureInbox("top"); err != nil {
		t.Fatal(err)
	}
	topRequests, _ := r.layout.RequestsDir("top")
	if err := os.WriteFile(filepath.Join(topRequests, ".keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	hbCtx, stopHB := context.WithCancel(context.Background())
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		(&mailbox.HeartbeatPublisher{Layout: r.layout, Session: "top"}).Run(hbCtx, 0, nil)
	}()
	defer func() { stopHB(); <-hbDone }()
	prompts := watchPrompts(t, topRequests)
	obs := observeResponses(t, r.dir("responses"))
	log := filepath.Join(r.base, "review.jsonl")
	relay := []string{"--terminal", "relay", "--parent", "top"}

	killed := map[string]time.Time{} // request id → when its child was reaped
	var withdrawals []time.Duration  // child reaped → its prompt gone
	var swept []time.Duration        // child reaped → its request gone
	total := 0

	// A. Killed while their asks are on the (relayed) screen, the rest
	// at random moments: before, while and after their request is read.
	b := r.broker(log, relay...)
	r.serving(b)
	for round := range rounds {
		children := make([]*process, n)
		for i := range children {
			children[i] = r.startAsk(fmt.Sprintf("a%d-%d", round, i), askHuman)
		}
		total += n
		onScreen := n
		if round%2 == 1 {
			onScreen = n / 2 // the other half dies at a random moment
		}
		ids := map[int]string{}
		for i, c := range children[:onScreen] {
			ids[i] = r.requestOf(c.pid())
			r.waitFor("the prompt of "+ids[i], func() bool { return prompts.wasShown(ids[i]) })
		}
		for i, c := range children {
			if i >= onScreen {
				pause(jitter(50 * time.Millisecond))
			}
			c.kill()
			if id, ok := ids[i]; ok {
				killed[id] = time.Now()
			} else {
				// Its id, if it wrote a request at all: the child's
				// own request file is gone or names its pid.
				if id := r.requestOfDead(c.pid()); id != "" {
					killed[id] = time.Now()
				}
			}
		}
		r.waitFor("every request of a dead child swept", func() bool { return countMail(r.dir("requests")) == 0 })
		r.waitFor("every prompt withdrawn", func() bool { return countMail(topRequests) == 0 })
	}
	for id, at := range killed {
		if gone, ok := prompts.goneAt(id); ok && gone.After(at) {
			withdrawals = append(withdrawals, gone.Sub(at))
		}
	}
	// B. Killed before any broker read their requests: nobody is prompted.
	b.stop(t)
	children := make([]*process, n)
	for i := range children {
		children[i] = r.startAsk(fmt.Sprintf("b%d", i), askHuman, "--no-heartbeat")
	}
	total += n
	r.waitFor("the requests on disk", func() bool { return countMail(r.dir("requests")) == n })
	before := map[string]bool{}
	for _, c := range children {
		before[r.requestOf(c.pid())] = true
		c.kill()
	}
	restarted := time.Now()
	b = r.broker(log, relay...)
	r.serving(b)
	r.waitFor("the dead children's requests swept", func() bool { return countMail(r.dir("requests")) == 0 })
	swept = append(swept, time.Since(restarted))
	b.stop(t)

	var promptedDead, stillUp []string
	for id := range before {
		if prompts.wasShown(id) {
			promptedDead = append(promptedDead, id)
		}
	}
	for id, at := range killed {
		if shown, ok := prompts.shownAt(id); ok && shown.After(at) {
			promptedDead = append(promptedDead, id+" (shown after its child was reaped)")
		}
		if prompts.wasShown(id) {
			if _, ok := prompts.goneAt(id); !ok {
				stillUp = append(stillUp, id)
			}
		}
	}
	obs.mu.Lock()
	answeredDead := 0
	for id := range killed {
		answeredDead += obs.creates[id+".json"]
	}
	for id := range before {
		answeredDead += obs.creates[id+".json"]
	}
	obs.mu.Unlock()
	slices.Sort(withdrawals)
	figures(t, "children_killed", total, "prompted_for_dead", len(promptedDead), "prompts_left_up", len(stillUp),
		"answers_to_dead", answeredDead, "longest_prompt_after_death", ms(percentile(withdrawals, 1)),
		"p50_prompt_after_death", ms(percentile(withdrawals, 0.5)), "sweep_after_restart", ms(swept[0]))
	if len(promptedDead) > 0 {
		t.Errorf("a human was prompted for a dead child: %v", promptedDead)
	}
	if len(stillUp) > 0 {
		t.Errorf("prompts left up for dead children: %v", stillUp)
	}
	if answeredDead > 0 {
		t.Errorf("%d answers written for dead children", answeredDead)
	}
	// The sweep runs every second; the prompt must go within it and a
	// little scheduling slack.
	if worst := percentile(withdrawals, 1); worst > 2500*time.Millisecond {
		t.Errorf("a dead child's prompt stayed up %s", worst)
	}
}

// startAsk starts a child ask for value without waiting for it.
func (r *rig) startAsk(session, value string, extra ...string) *process {
	args := append([]string{"ask", "--parent", "parent", "--session", session, "--agent", "Explore",
		"--surface", "bash", "--value", value, "--root", r.root, "--timeout", "120s"}, extra...)
	return r.s.startCmd(r.t, r.command(context.Background(), "child", args...))
}

// requestOf waits for the request the child with pid wrote, and returns
// its id.
func (r *rig) requestOf(pid int) string {
	r.t.Helper()
	var id string
	r.waitFor(fmt.Sprintf("the request of child %d", pid), func() bool {
		id = r.requestOfDead(pid)
		return id != ""
	})
	return id
}

// requestOfDead returns the id of the request in the inbox that names pid,
// or "".
func (r *rig) requestOfDead(pid int) string {
	names, _ := readNames(r.dir("requests"))
	for _, name := range names {
		if !mailbox.IsMailName(name) {
			continue
		}
		data, err := mailbox.ReadFile(filepath.Join(r.dir("requests"), name))
		if err != nil {
			continue
		}
		if req, _, err := wire.DecodeRequest(data); err == nil && req.RequesterPID == pid {
			return req.ID
		}
	}
	return ""
}

// promptWatch records when each prompt (a request in the upper inbox)
// appeared and was withdrawn.
type promptWatch struct {
	mu      sync.Mutex
	shown   map[string]time.Time
	gone    map[string]time.Time
	w       *fsnotify.Watcher
	done    chan struct{}
	dir     string
	problem []string
}

func watchPrompts(t *testing.T, dir string) *promptWatch {
	t.Helper()
	w := newWatcher(t)
	if err := w.Add(dir); err != nil {
		w.Close()
		t.Fatal(err)
	}
	p := &promptWatch{shown: map[string]time.Time{}, gone: map[string]time.Time{}, w: w, done: make(chan struct{}), dir: dir}
	go func() {
		defer close(p.done)
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				name := filepath.Base(ev.Name)
				if !mailbox.IsMailName(name) {
					continue
				}
				id := strings.TrimSuffix(name, ".json")
				p.mu.Lock()
				switch {
				case ev.Has(fsnotify.Create):
					if _, seen := p.shown[id]; !seen {
						p.shown[id] = time.Now()
					}
				case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
					p.gone[id] = time.Now()
				}
				p.mu.Unlock()
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				p.mu.Lock()
				p.problem = append(p.problem, err.Error())
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { w.Close(); <-p.done })
	return p
}

func (p *promptWatch) wasShown(id string) bool {
	_, ok := p.shownAt(id)
	return ok
}

func (p *promptWatch) shownAt(id string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.shown[id]
	return at, ok
}

func (p *promptWatch) goneAt(id string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok := p.gone[id]
	return at, ok
}
