package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// TestReliability runs every campaign against one build of the binaries.
// Run one with -run 'TestReliability/NAME'.
func TestReliability(t *testing.T) {
	if testing.Short() {
		t.Skip("the reliability campaigns build and run the real binaries")
	}
	s := &suite{bin: buildBinaries(t), soak: os.Getenv("COURIER_SOAK") != ""}
	t.Run("broker_kills", s.brokerKills)
	t.Run("child_kills", s.childKills)
	t.Run("hostile_mailbox", s.hostileMailbox)
	t.Run("sustained_flood", s.sustainedFlood)
	t.Run("other_users", s.otherUsers)
	t.Run("forged_answers", s.forgedAnswers)
	t.Run("resource_faults", s.resourceFaults)
	t.Run("watcher_faults", s.watcherFaults)
	t.Run("plugin_faults", s.pluginFaults)
	t.Run("isolation", s.isolation)
	t.Run("nats", s.nats)
}

// suite is what every campaign shares.
type suite struct {
	bin  string // broker, child, testauthz, readprobe, inotifyhog
	soak bool   // COURIER_SOAK: the long campaigns
}

// scale picks the fast or the soak size of a campaign.
func (s *suite) scale(fast, soak int) int {
	if s.soak {
		return soak
	}
	return fast
}

// waitLimit bounds every wait for a condition: long enough for a loaded
// 2-core machine, short enough that a hang fails the test.
const waitLimit = 60 * time.Second

func buildBinaries(t *testing.T) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	module := filepath.Join(filepath.Dir(self), "..", "..")
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", bin+string(filepath.Separator),
		"./cmd/broker", "./cmd/child", "./plugins/testdata/plugins/testauthz", "./integration/reliability/testdata/readprobe",
		"./integration/reliability/testdata/inotifyhog")
	cmd.Dir = module
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the binaries: %v\n%s", err, out)
	}
	// The child's NATS sibling, which child execs for a nats:// transport,
	// built as `make build` builds it (decision 0028).
	cmd = exec.Command("go", "build", "-tags", "nats", "-o", filepath.Join(bin, "courier-child-nats"), "./cmd/child")
	cmd.Dir = module
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building courier-child-nats: %v\n%s", err, out)
	}
	// The broker's NATS sibling, which broker execs for any NATS flag
	// (decision 0034).
	cmd = exec.Command("go", "build", "-tags", "nats", "-o", filepath.Join(bin, "courier-broker-nats"), "./cmd/broker")
	cmd.Dir = module
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building courier-broker-nats: %v\n%s", err, out)
	}
	// Another user runs them (watcher_faults, with inotify exhausted).
	for _, dir := range []string{bin, filepath.Dir(bin)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// rig is one mailbox and its broker's configuration.
type rig struct {
	t      *testing.T
	s      *suite
	base   string // 0755, holds the root, the config and the logs
	root   string // the mailbox root (0700, made by the broker)
	layout mailbox.Layout
	config string
	// cred, when set, runs the rig's broker and children as that user.
	cred *syscall.Credential
}

// config: git status is allowed by a rule, npm denied by one, anything
// else asks (and reaches the terminal).
const rulesConfig = `{"permission": {"*": "ask", "bash": {
	"*": "ask",
	"git status *": "allow",
	"npm *": {"action": "deny", "reason": "Use pnpm instead"}
}}}`

// newRig makes a mailbox on tmpfs (/dev/shm) when there is one: the
// production advice, and fast enough for bursts.
func (s *suite) newRig(t *testing.T) *rig {
	t.Helper()
	parent := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		parent = "/dev/shm"
	}
	base, err := os.MkdirTemp(parent, "courier-reliability-")
	if err != nil {
		base = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(base) })
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, s: s, base: base, root: filepath.Join(base, "root")}
	r.layout = mailbox.Layout{Root: r.root}
	r.config = filepath.Join(base, "config.json")
	if err := os.WriteFile(r.config, []byte(rulesConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) dir(sub string) string {
	return filepath.Join(r.root, "sessions", "parent", sub)
}

// keepInbox creates the inbox with a dotfile in each directory, so that
// no child's cleanup removes the directories a test watches.
func (r *rig) keepInbox() {
	r.t.Helper()
	if err := r.layout.EnsureInbox("parent"); err != nil {
		r.t.Fatal(err)
	}
	for _, d := range []string{r.dir("requests"), r.dir("responses")} {
		if err := os.WriteFile(filepath.Join(d, ".keep"), nil, 0o600); err != nil {
			r.t.Fatal(err)
		}
	}
}

// process is a binary the test started; cleanup kills it if it still runs.
type process struct {
	name   string
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

func (s *suite) startCmd(t *testing.T, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{name: filepath.Base(cmd.Path), cmd: cmd, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if cmd.Env == nil {
		cmd.Env = cleanEnv()
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.signal(syscall.SIGKILL)
		<-p.done
	})
	return p
}

// cleanEnv is the environment without the variables that would point a
// child at another mailbox or parent.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PI_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Signal(sig)
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// freeze is SIGSTOP, and waits until every thread of the process is
// stopped: kill(2) returns before a running thread on another CPU has
// stopped, and a broker still answering would spoil a fault's set-up.
func (p *process) freeze(t *testing.T) {
	t.Helper()
	p.signal(syscall.SIGSTOP)
	waitFor(t, p.name+" stopped", func() bool {
		tasks, err := readNames("/proc/" + strconv.Itoa(p.pid()) + "/task")
		if err != nil {
			return false
		}
		for _, task := range tasks {
			stat, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid()) + "/task/" + task + "/stat")
			if err != nil {
				return false
			}
			i := bytes.LastIndexByte(stat, ')')
			if i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' && stat[i+2] != 't' {
				return false
			}
		}
		return true
	})
}

// kill is SIGKILL, and waits until the process is reaped.
func (p *process) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// stop is SIGINT; the process must exit 0 within the wait limit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	p.signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(waitLimit):
		p.kill()
		t.Fatalf("%s did not stop on SIGINT within %s\n%s", p.name, waitLimit, p.stderr)
	}
	if p.err != nil {
		t.Errorf("%s: %v\n%s", p.name, p.err, p.stderr)
	}
}

// broker starts broker serve on the rig with the rules config, the
// headless terminal and a review log, plus args.
func (r *rig) broker(log string, args ...string) *process {
	r.t.Helper()
	all := append([]string{"serve", "--session", "parent", "--root", r.root, "--config", r.config, "--terminal", "deny", "--log", log}, args...)
	return r.s.startCmd(r.t, r.command(context.Background(), "broker", all...))
}

// command is one of the rig's binaries, run as the rig's user. It dies
// with the test process (Pdeathsig), so that a test killed by its timeout,
// whose cleanups never run, leaves no broker or child behind.
func (r *rig) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(r.s.bin, name), args...)
	cmd.Env = cleanEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if r.cred != nil {
		cmd.SysProcAttr.Credential = r.cred
		cmd.Env = append(cmd.Env, "HOME="+r.base)
	}
	return cmd
}

// serving waits until the heartbeat names p: the broker is watching.
func (r *rig) serving(p *process) {
	r.t.Helper()
	r.waitFor("the broker's heartbeat", func() bool {
		if p.exited() {
			r.t.Fatalf("the broker exited: %v\n%s", p.err, p.stderr)
		}
		if r.cred != nil {
			// Another user's record, which mailbox.ReadFile refuses to us.
			path, _ := r.layout.HeartbeatPath("parent")
			data, err := os.ReadFile(path)
			h, derr := wire.DecodeHeartbeat(data)
			return err == nil && derr == nil && h.PID == p.pid()
		}
		s, err := r.layout.CheckServing("parent", time.Now())
		return err == nil && s.State == mailbox.ServingAlive && s.Heartbeat.PID == p.pid()
	})
}

// waitFor polls cond until it holds, failing the test after waitLimit.
func (r *rig) waitFor(what string, cond func() bool) time.Duration {
	r.t.Helper()
	return waitFor(r.t, what, cond)
}

func waitFor(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(waitLimit)
	// Backing off from 1 ms to 50 ms: quick conditions are seen at once,
	// and a long wait (listing a 20,000-file inbox) does not steal the
	// CPU from the broker it waits for.
	interval := time.Millisecond
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", waitLimit, what)
		}
		<-timer.C
		interval = min(2*interval, 50*time.Millisecond)
		timer.Reset(interval)
	}
	return time.Since(start)
}

// countMail is how many *.json mail names dir holds.
func countMail(dir string) int {
	names, _ := readNames(dir)
	n := 0
	for _, name := range names {
		if mailbox.IsMailName(name) {
			n++
		}
	}
	return n
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// answer is one child ask's outcome.
type answer struct {
	value  string
	code   int
	out    childOutput
	stderr string
	took   time.Duration
	pid    int
}

type childOutput struct {
	RequestID    string          `json:"requestId"`
	Approved     bool            `json:"approved"`
	State        string          `json:"state"`
	DenialReason *string         `json:"denialReason"`
	Unavailable  bool            `json:"unavailable"`
	DecidedBy    json.RawMessage `json:"decidedBy"`
}

func (a answer) reason() string {
	if a.out.DenialReason == nil {
		return ""
	}
	return *a.out.DenialReason
}

// ask runs one child ask for value on the rig and waits for it; ctx
// ending kills it.
func (r *rig) ask(ctx context.Context, session, value string, extra ...string) answer {
	args := append([]string{"ask", "--parent", "parent", "--session", session, "--agent", "Explore",
		"--surface", "bash", "--value", value, "--root", r.root, "--timeout", "60s"}, extra...)
	return r.runAsk(ctx, value, args)
}

// The asks of the rules config and what each must come to.
var (
	askAllow = "git status --short" // exit 0, a rule
	askDeny  = "npm install"        // exit 1, a rule
	askHuman = "make deploy"        // reaches the terminal
)

// expected says whether a is the answer its value must get from a broker
// with the rules config and the headless terminal.
func expected(a answer) bool {
	switch {
	case strings.HasPrefix(a.value, "git status"):
		return a.code == 0 && a.out.Approved && strings.Contains(string(a.out.DecidedBy), `"kind":"rule"`)
	case strings.HasPrefix(a.value, "npm"):
		return a.code == 1 && !a.out.Approved && a.reason() == "Use pnpm instead"
	default:
		return a.code == 3 && !a.out.Approved && strings.Contains(a.reason(), "No human is available")
	}
}

// abandoned says whether a gave up on its own because the parent was not
// serving for the grace (a restart slower than 2 s): allowed by the
// contract. A child that waited out its whole timeout is not counted here:
// with a broker restarted within milliseconds, that is a lost ask.
func abandoned(a answer) bool {
	return a.code == 3 && !a.out.Approved && strings.Contains(a.reason(), "is not serving")
}

// terminalEntries counts, per request id, the broker's terminal review
// entries (approved or denied) across review logs.
func terminalEntries(t *testing.T, logs ...string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	events := reviewEvents(t, logs...)
	for _, event := range []string{"forwarded_permission.approved", "forwarded_permission.denied"} {
		for id, n := range events[event] {
			counts[id] += n
		}
	}
	return counts
}

// figures reports a campaign's numbers: in the test log, and appended to
// $COURIER_FIGURES for `make test` and `make soak` to print.
func figures(t *testing.T, kv ...any) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "reliability %-16s", strings.TrimPrefix(t.Name(), "TestReliability/"))
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	line := b.String()
	t.Log(line)
	if path := os.Getenv("COURIER_FIGURES"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Errorf("figures: %v", err)
			return
		}
		defer f.Close()
		fmt.Fprintln(f, line)
	}
}

// syncBuffer is a bytes.Buffer safe for a process's writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Contains(sub string) bool { return strings.Contains(s.String(), sub) }

// writeRequest publishes a request the way a child does (a temp file on
// the same filesystem, then rename) with the given id and command.
func (r *rig) writeRequest(id, value string, pid int) {
	r.t.Helper()
	data := requestJSON(id, value, pid)
	tmp := filepath.Join(r.root, "."+id+".tmp") // same filesystem, not watched
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(r.dir("requests"), id+".json")); err != nil {
		r.t.Fatal(err)
	}
}

// requestJSON is a pi 25.x request with the child-fixed facts for a bash
// command; pid 0 leaves requesterPid out.
func requestJSON(id, value string, pid int) []byte {
	req := wire.Request{
		ID: id, CreatedAt: time.Now().UnixMilli(), RequesterSessionID: "dropped", TargetSessionID: "parent",
		RequesterAgentName: "Explore", Message: "Agent 'Explore' requested bash command '" + value + "'. Allow this command?",
		Source: wire.SourceToolCall, Surface: "bash", Value: value, RequesterPID: pid,
		AccessIntent: &wire.AccessIntent{Surface: "bash", MatchValues: []string{value}, RequesterCwd: "/w",
			Principal: wire.Principal{SessionID: "dropped", AgentName: "Explore"}},
	}
	data, err := wire.EncodeRequest(req)
	if err != nil {
		panic(err)
	}
	return data
}

// jitter is a random duration in [0, max): when to strike.
func jitter(max time.Duration) time.Duration {
	return time.Duration(rand.Int64N(int64(max)))
}

// pause waits d on purpose: a chaos schedule (when to kill), never a wait
// for something to happen.
func pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}

// percentile of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + "ms"
}

// vmHWM is the peak resident set of pid, in KiB (0 when unknown).
func vmHWM(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return n
		}
	}
	return 0
}
