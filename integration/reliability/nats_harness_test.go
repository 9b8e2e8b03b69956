package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/natsembed"
)

// The NATS campaigns (issue 21): the real broker and children over a
// JetStream engine embedded in the test process (or the broker's own,
// --nats-listen), under the engine's faults. Every case counts its asks:
// answered (the answer the built-in rules give, exactly once), lost (no
// answer, or a wrong one), twice (a second terminal review entry or
// published-response entry, or a second, different response on one
// response subject), republished (the same response's bytes published
// again: one answer, kept once by the stream), unavailable (the child gave
// up on its own, allowed only where the case says so).
func (s *suite) nats(t *testing.T) {
	t.Run("answers", s.natsAnswers)
	t.Run("broker_kills", s.natsBrokerKills)
	t.Run("server_restart", s.natsServerRestart)
	t.Run("reconnect", s.natsReconnect)
	t.Run("slow_consumer", s.natsSlowConsumer)
	t.Run("cluster", s.natsCluster)
	// These two mostly wait (a standby's lease lapsing, children's
	// deadlines running out): together, once the others are done, on
	// servers and roots of their own.
	t.Run("broker_sigkill", parallel(s.natsBrokerSigkill))
	t.Run("partition", parallel(s.natsPartition))
}

// parallel runs a campaign as a parallel subtest.
func parallel(campaign func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		t.Parallel()
		campaign(t)
	}
}

// natsOwner is the asking identity every child gives (--nats-owner).
const natsOwner = "alice"

// The built-in rules' asks over NATS: decided by a rule at once, so that
// an answer is told apart from a child giving up (the headless terminal's
// answer is "unavailable" too).
var (
	natsAllow = "git status"                   // exit 0, the built-in "git status *"
	natsDeny  = "git push --force origin main" // exit 1, the built-in "git push --force*"
)

// natsValue is the i-th ask of a campaign: allowed and denied in turn.
func natsValue(i int) string {
	if i%2 == 0 {
		return natsAllow
	}
	return natsDeny
}

// ruleAnswered says whether a is the built-in rules' answer to its value,
// nested under forwarded as the child prints it.
func ruleAnswered(a answer) bool {
	var d struct {
		Kind     string `json:"kind"`
		Decision struct {
			Kind    string `json:"kind"`
			Pattern string `json:"pattern"`
		} `json:"decision"`
	}
	if json.Unmarshal(a.out.DecidedBy, &d) != nil || d.Kind != "forwarded" || d.Decision.Kind != "rule" {
		return false
	}
	switch a.value {
	case natsAllow:
		return a.code == 0 && a.out.Approved && d.Decision.Pattern == "git status *"
	case natsDeny:
		return a.code == 1 && !a.out.Approved && !a.out.Unavailable && d.Decision.Pattern == "git push --force*"
	}
	return false
}

// gaveUp says whether a is its child giving up on its own: unavailable,
// exit 3, never allowed, with one of pi's reasons for nobody answering
// (not the broker's "No human is available").
func gaveUp(a answer) bool {
	r := a.reason()
	return a.code == 3 && !a.out.Approved && a.out.Unavailable &&
		(strings.Contains(r, "is not serving") || strings.Contains(r, "did not answer within") ||
			strings.Contains(r, "could not be written") || strings.Contains(r, "session ended"))
}

// embedded starts a natsembed server in the test process; the test's
// cleanup shuts it down.
func embedded(t *testing.T, opts natsembed.Options) *natsembed.Server {
	t.Helper()
	opts.NoLog = true
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	srv, err := natsembed.Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting the embedded NATS server %q: %v", opts.ServerName, err)
	}
	t.Cleanup(func() { shutdown(t, srv) })
	return srv
}

// shutdown stops srv and waits, within the wait limit; a second call is
// harmless.
func shutdown(t *testing.T, srv *natsembed.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("shutting the embedded NATS server down: %v", err)
	}
}

// singleServer is one embedded server on a random port with its store
// under the test's temp dir.
func singleServer(t *testing.T) *natsembed.Server {
	t.Helper()
	store := filepath.Join(t.TempDir(), "jetstream")
	return embedded(t, natsembed.Options{ServerName: "n1", Host: "127.0.0.1", Port: -1, StoreDir: store})
}

// portOf is the port of a nats://host:port URL.
func portOf(t *testing.T, url string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(url, "nats://"))
	if err != nil {
		t.Fatalf("the port of %q: %v", url, err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("the port of %q: %v", url, err)
	}
	return n
}

// freePort is a loopback port nobody listened on a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// natsBroker starts broker serve on the rig's file root with the built-in
// rules and the headless terminal, serving NATS too (args: --nats URL or
// --nats-listen ADDR, and more).
func (r *rig) natsBroker(log string, args ...string) *process {
	r.t.Helper()
	all := append([]string{"serve", "--session", "parent", "--root", r.root, "--terminal", "deny", "--log", log}, args...)
	return r.s.startCmd(r.t, r.command(context.Background(), "broker", all...))
}

// natsChildArgs is a child ask over NATS for value, from session.
func natsChildArgs(url, session, value string, timeout time.Duration, extra ...string) []string {
	return append([]string{"ask", "--transport", url, "--nats-local", "--nats-owner", natsOwner,
		"--parent", "parent", "--session", session, "--agent", "Explore",
		"--surface", "bash", "--value", value, "--timeout", timeout.String()}, extra...)
}

// natsAsk runs one child ask over NATS and waits for it.
func (r *rig) natsAsk(ctx context.Context, url, session, value string, timeout time.Duration, extra ...string) answer {
	return r.runAsk(ctx, value, natsChildArgs(url, session, value, timeout, extra...))
}

// runAsk runs the child with args and reads its answer; ctx ending kills it.
func (r *rig) runAsk(ctx context.Context, value string, args []string) answer {
	cmd := r.command(ctx, "child", args...)
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	a := answer{value: value, code: -1}
	if err := cmd.Start(); err != nil {
		a.stderr = err.Error()
		return a
	}
	a.pid = cmd.Process.Pid
	err := cmd.Wait()
	a.took = time.Since(start)
	a.code = cmd.ProcessState.ExitCode()
	if err != nil && a.code < 0 {
		a.stderr = err.Error()
	}
	a.stderr += stderr.String()
	json.Unmarshal(stdout.Bytes(), &a.out)
	return a
}

// tally is a campaign's children's outcomes.
type tally struct {
	asked, answered, unavailable int
	lost                         []string
	gaveUpExample                string // one given-up child's answer and stderr
	longest                      time.Duration
	ids                          map[string]bool // request ids answered
}

func countAnswers(answers []answer) tally {
	tl := tally{asked: len(answers), ids: map[string]bool{}}
	for _, a := range answers {
		tl.longest = max(tl.longest, a.took)
		switch {
		case ruleAnswered(a):
			tl.answered++
			tl.ids[a.out.RequestID] = true
		case gaveUp(a):
			tl.unavailable++
			if tl.gaveUpExample == "" {
				tl.gaveUpExample = fmt.Sprintf("%q after %s: %q\n%s", a.value, a.took.Round(time.Millisecond), a.reason(), a.stderr)
			}
		default:
			tl.lost = append(tl.lost, fmt.Sprintf("%q exit %d: %+v decidedBy %s: %s", a.value, a.code, a.out, a.out.DecidedBy, a.stderr))
		}
	}
	return tl
}

// natsConn is the test's own client of the engine (no credentials:
// loopback), closed by the test's cleanup.
func natsConn(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	nc, err := natsbox.Connect(ctx, natsbox.Options{URL: url, Local: true, Name: "reliability-test"})
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// natsServing waits until the broker b heartbeats in the engine for the
// session "parent".
func (r *rig) natsServing(js jetstream.JetStream, b *process) {
	r.t.Helper()
	r.natsServingAs(js, b, "parent")
}

// natsServingAs waits until the broker b heartbeats in the engine for
// session.
func (r *rig) natsServingAs(js jetstream.JetStream, b *process, session string) {
	r.t.Helper()
	r.waitFor("the broker's NATS heartbeat", func() bool {
		if b.exited() {
			r.t.Fatalf("the broker exited: %v\n%s", b.err, b.stderr)
		}
		ctx, cancel := context.WithTimeout(r.t.Context(), 2*time.Second)
		defer cancel()
		s, err := natsbox.ReadServing(ctx, js, session, time.Now())
		return err == nil && s.Alive && s.Heartbeat.PID == b.pid()
	})
}

// responseWatch records, per response subject, every response published
// (a core subscription sees each publish, those the stream dropped as
// duplicates included).
type responseWatch struct {
	mu     sync.Mutex
	counts map[string]int
	data   map[string][]byte // the first response on each subject
	other  map[string]int    // responses whose bytes differ from the first
}

func watchResponses(t *testing.T, nc *nats.Conn) *responseWatch {
	t.Helper()
	w := &responseWatch{counts: map[string]int{}, data: map[string][]byte{}, other: map[string]int{}}
	sub, err := nc.Subscribe("courier.resp.>", func(m *nats.Msg) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.counts[m.Subject]++
		if first, ok := w.data[m.Subject]; !ok {
			w.data[m.Subject] = m.Data
		} else if !bytes.Equal(first, m.Data) {
			w.other[m.Subject]++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sub.SetPendingLimits(-1, -1)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	return w
}

// first is the first response published on subj.
func (w *responseWatch) first(subj string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, ok := w.data[subj]
	return data, ok
}

// answered is how many response subjects got a response.
func (w *responseWatch) answered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.data)
}

// published says which subjects got a second, different answer (twice),
// and how many times the same bytes were published again (repeats: one
// answer, which the stream keeps once under its Nats-Msg-Id).
func (w *responseWatch) published() (twice []string, repeats int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for subj, n := range w.counts {
		if w.other[subj] > 0 {
			twice = append(twice, fmt.Sprintf("%s: %d different answers", subj, w.other[subj]+1))
		}
		repeats += n - 1 - w.other[subj]
	}
	return twice, repeats
}

// answeredEarlier suffixes the event of an entry that says its answer
// was written by an earlier run of the broker (a NATS publication of an
// answer a killed broker left): reviewEvents counts such an entry under
// its event and again under the suffixed one.
const answeredEarlier = "+answeredEarlier"

// reviewEvents counts, per event, the entries per request id across the
// review logs.
func reviewEvents(t *testing.T, logs ...string) map[string]map[string]int {
	t.Helper()
	counts := map[string]map[string]int{}
	for _, log := range logs {
		data, err := os.ReadFile(log)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			var e struct {
				Event           string `json:"event"`
				RequestID       string `json:"requestId"`
				AnsweredEarlier bool   `json:"answeredEarlier"`
			}
			if json.Unmarshal([]byte(line), &e) != nil {
				continue // a SIGKILL can cut the last line
			}
			events := []string{e.Event}
			if e.AnsweredEarlier {
				events = append(events, e.Event+answeredEarlier)
			}
			for _, event := range events {
				if counts[event] == nil {
					counts[event] = map[string]int{}
				}
				counts[event][e.RequestID]++
			}
		}
	}
	return counts
}

// once checks that every id of ids has exactly one entry in perID, and
// says which have more or none.
func once(perID map[string]int, ids map[string]bool) (twice, missing []string) {
	for id, n := range perID {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s ×%d", id, n))
		}
	}
	for id := range ids {
		if perID[id] == 0 {
			missing = append(missing, id)
		}
	}
	return twice, missing
}

// sum is the number of entries in perID.
func sum(perID map[string]int) int {
	n := 0
	for _, c := range perID {
		n += c
	}
	return n
}

// streamMsgs is how many messages the stream holds now (-1 when it cannot
// be read).
func streamMsgs(ctx context.Context, js jetstream.JetStream, name string) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, name)
	if err != nil {
		return -1
	}
	info, err := st.Info(ctx)
	if err != nil {
		return -1
	}
	return int(info.State.Msgs)
}

// check fails the test for every kind of miscount; the figures are
// printed before.
func check(t *testing.T, tl tally, twice []string, allowUnavailable bool) {
	t.Helper()
	if len(tl.lost) > 0 {
		t.Errorf("%d of %d asks lost, e.g. %s", len(tl.lost), tl.asked, tl.lost[0])
	}
	if len(twice) > 0 {
		t.Errorf("answered twice: %v", twice)
	}
	if tl.unavailable > 0 && !allowUnavailable {
		t.Errorf("%d of %d children gave up (unavailable) where every ask must be answered, e.g. %s", tl.unavailable, tl.asked, tl.gaveUpExample)
	}
}

// natsChild is a child ask over NATS started without waiting; result
// reads its answer.
type natsChild struct {
	value  string
	p      *process
	stdout *syncBuffer
	start  time.Time
	ended  chan time.Time // when the process was reaped
}

// startNATSChild starts a child ask over NATS.
func (r *rig) startNATSChild(url, session, value string, timeout time.Duration, extra ...string) *natsChild {
	r.t.Helper()
	cmd := r.command(context.Background(), "child", natsChildArgs(url, session, value, timeout, extra...)...)
	out := &syncBuffer{}
	cmd.Stdout = out
	c := &natsChild{value: value, stdout: out, start: time.Now(), ended: make(chan time.Time, 1)}
	c.p = r.s.startCmd(r.t, cmd)
	go func() { <-c.p.done; c.ended <- time.Now() }()
	return c
}

// result waits (within the wait limit past the child's own timeout) for
// the child to end and reads its answer.
func (c *natsChild) result(t *testing.T, limit time.Duration) answer {
	t.Helper()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-c.p.done:
	case <-timer.C:
		c.p.kill()
	}
	a := answer{value: c.value, code: -1, pid: c.p.pid(), took: (<-c.ended).Sub(c.start), stderr: c.p.stderr.String()}
	var ee *exec.ExitError
	switch {
	case c.p.err == nil:
		a.code = 0
	case errors.As(c.p.err, &ee):
		a.code = ee.ExitCode()
	}
	json.Unmarshal([]byte(c.stdout.String()), &a.out)
	return a
}

// results waits for every child (each within limit) and reads the answers.
func results(t *testing.T, children []*natsChild, limit time.Duration) []answer {
	t.Helper()
	answers := make([]answer, len(children))
	for i, c := range children {
		answers[i] = c.result(t, limit)
	}
	return answers
}

// requestStream is the JetStream stream the asks wait in.
const requestStream = "COURIER_REQUESTS"

// parkAsks freezes the broker b and starts n children over url (values
// natsValue(i), sessions prefix+i); it returns once the request stream
// holds all n asks, unread, and how long that took from the freeze.
func (r *rig) parkAsks(b *process, js jetstream.JetStream, url, prefix string, n int, timeout time.Duration) ([]*natsChild, time.Duration) {
	r.t.Helper()
	b.freeze(r.t)
	frozen := time.Now()
	children := make([]*natsChild, n)
	for i := range children {
		children[i] = r.startNATSChild(url, fmt.Sprintf("%s%d", prefix, i), natsValue(i), timeout)
	}
	r.waitFor(fmt.Sprintf("%d asks in the request stream", n), func() bool {
		for _, c := range children {
			if c.p.exited() {
				r.t.Fatalf("a child ended while its ask should wait in the stream: %v\nstdout: %s\nstderr: %s", c.p.err, c.stdout, c.p.stderr)
			}
		}
		return streamMsgs(r.t.Context(), js, requestStream) >= n
	})
	return children, time.Since(frozen)
}

// thaw lets a frozen process run again.
func (p *process) thaw() { p.signal(syscall.SIGCONT) }
