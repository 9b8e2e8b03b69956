package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// The isolation campaign's users (issue 18, docs/decisions/0024). Numeric
// ids need no /etc/passwd or /etc/group entries: the kernel only compares
// numbers, and the broker and child take numeric --ask-group and
// --broker-user.
const (
	askGID    = 61000 // the ask group: the broker's user and every child's
	brokerUID = 61001 // the broker's own user (primary group 61001)
	childUID  = 61002 // the subagents' user (primary group 61002)
	otherUID  = 61003 // a user an agent's overrides are vouched for, not the child
)

// isoMode is one deployment the attacks run in. The attacks are the same
// code in both; only the users and two flags differ.
type isoMode struct {
	name string
	// isolated: the broker runs as brokerUID with --ask-group, the child
	// and the attacker as childUID with --broker-user. Otherwise all three
	// run as childUID, the operator's user (deployment 1 of
	// docs/THREAT-MODEL.md).
	isolated bool
}

var isoModes = []isoMode{{name: "isolated", isolated: true}, {name: "same_uid"}}

func (m isoMode) brokerCred() *syscall.Credential {
	if m.isolated {
		return &syscall.Credential{Uid: brokerUID, Gid: brokerUID, Groups: []uint32{askGID}}
	}
	return m.childCred()
}

// childCred is the child's, and the attacker's: a subagent's command runs
// as the child's user, which is the whole point.
func (m isoMode) childCred() *syscall.Credential {
	return &syscall.Credential{Uid: childUID, Gid: childUID, Groups: []uint32{askGID}}
}

// isolation is issue 18's "Done when": each attack, scripted against the
// real binaries with two real uids, fails in the isolation mode; in the
// same-uid mode (the same code, the mode switched off) what happens is
// recorded, and asserted "not prevented" where that outcome is
// deterministic. Root is needed to run processes as other users.
func (s *suite) isolation(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the isolation campaign runs the broker and the child as two real uids (61001, 61002): it needs root")
	}
	buildProbe(t, s.bin)
	for _, m := range isoModes {
		t.Run(m.name, func(t *testing.T) {
			f := &isoFigures{}
			t.Run("forged_approvals", func(t *testing.T) { s.isoForgedApprovals(t, m, f) })
			t.Run("broker_journal", func(t *testing.T) { s.isoBrokerJournal(t, m, f) })
			t.Run("planted_child_grants", func(t *testing.T) { s.isoPlantedChildGrants(t, m, f) })
			t.Run("agent_claim", func(t *testing.T) { s.isoAgentClaim(t, m, f) })
			t.Run("happy_path", func(t *testing.T) { s.isoHappyPath(t, m, f) })
			figures(t, f.kv...)
		})
	}
}

// isoFigures collects one mode's figures, in the order they were taken.
type isoFigures struct{ kv []any }

func (f *isoFigures) add(kv ...any) { f.kv = append(f.kv, kv...) }

// buildProbe adds isolationprobe (testdata/isolationprobe) to the suite's
// binaries. It is built here rather than with the others so that this
// campaign alone pays for it.
func buildProbe(t *testing.T, bin string) {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	module := filepath.Join(filepath.Dir(self), "..", "..")
	cmd := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./integration/reliability/testdata/isolationprobe")
	cmd.Dir = module
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building isolationprobe: %v\n%s", err, out)
	}
}

// The config of the campaign: git status allowed, a force push denied by
// a rule, anything else asks (and reaches the headless terminal, which
// denies). agents, when set, is the config's "agents" member.
func isoConfig(agents string) string {
	c := `{"permission": {"*": "ask", "bash": {
	"*": "ask",
	"git status *": "allow",
	"git push --force*": {"action": "deny", "reason": "No force pushes"}
}}`
	if agents != "" {
		c += `, "agents": ` + agents
	}
	return c + "}"
}

// The asks of the campaign.
const (
	isoAllow = "git status --short"
	isoDeny  = "git push --force origin main"
	isoHuman = "make deploy"
)

// isoRig is one mailbox with the mode's users. The test, root, reads
// everything with plain reads: the mailbox's owner checks are the
// binaries' business, not the observer's.
type isoRig struct {
	t    *testing.T
	s    *suite
	m    isoMode
	base string // 0711 root's: every user can traverse it, none list it
	own  string // the broker's user's 0700 directory: config and review log
	root string // the mailbox root, made the broker's user's
	// config and log are the broker's --config and --log.
	config, log string
	// homes are $HOME of the broker's and the child's processes.
	brokerHome, childHome string
}

func (s *suite) newIsoRig(t *testing.T, m isoMode, config string) *isoRig {
	t.Helper()
	parent := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		parent = "/dev/shm"
	}
	base, err := os.MkdirTemp(parent, "courier-isolation-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o711); err != nil {
		t.Fatal(err)
	}
	r := &isoRig{t: t, s: s, m: m, base: base, own: filepath.Join(base, "broker"), root: filepath.Join(base, "root"),
		brokerHome: filepath.Join(base, "broker-home"), childHome: filepath.Join(base, "child-home")}
	r.config, r.log = filepath.Join(r.own, "config.json"), filepath.Join(r.own, "review.jsonl")
	b, c := m.brokerCred(), m.childCred()
	for _, d := range []struct {
		path string
		cred *syscall.Credential
	}{{r.own, b}, {r.root, b}, {r.brokerHome, b}, {r.childHome, c}} {
		if err := os.Mkdir(d.path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d.path, int(d.cred.Uid), int(d.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	r.writeConfig(config)
	return r
}

// writeConfig replaces the broker's config (read at its next start).
func (r *isoRig) writeConfig(config string) {
	r.t.Helper()
	cred := r.m.brokerCred()
	if err := os.WriteFile(r.config, []byte(config), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chown(r.config, int(cred.Uid), int(cred.Gid)); err != nil {
		r.t.Fatal(err)
	}
}

// command is a binary of the suite run as cred, dying with the test.
func (r *isoRig) command(ctx context.Context, cred *syscall.Credential, home, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(r.s.bin, name), args...)
	cmd.Env = append(cleanEnv(), "HOME="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// broker starts broker serve on session parent as the mode's broker user,
// with terminal ("deny", or "relay" to top) and the rig's config and log.
func (r *isoRig) broker(terminal ...string) *process {
	r.t.Helper()
	if len(terminal) == 0 {
		terminal = []string{"--terminal", "deny"}
	}
	args := append([]string{"serve", "--session", "parent", "--root", r.root, "--config", r.config, "--log", r.log}, terminal...)
	if r.m.isolated {
		args = append(args, "--ask-group", strconv.Itoa(askGID))
	}
	p := r.s.startCmd(r.t, r.command(context.Background(), r.m.brokerCred(), r.brokerHome, "broker", args...))
	r.serving(p)
	return p
}

// serving waits until the heartbeat of parent names p.
func (r *isoRig) serving(p *process) {
	r.t.Helper()
	path := filepath.Join(r.root, "serving", "parent.json")
	waitFor(r.t, "the broker's heartbeat", func() bool {
		if p.exited() {
			r.t.Fatalf("the broker exited: %v\n%s", p.err, p.stderr)
		}
		data, err := os.ReadFile(path)
		h, derr := wire.DecodeHeartbeat(data)
		return err == nil && derr == nil && h.PID == p.pid()
	})
}

// askTimeout is each child's --timeout. Every ask here is answered in
// milliseconds by a rule, the headless terminal or the upper peer; a broker
// that does not answer (a build that refuses the other uid's requests)
// must fail the campaign in seconds, not hold it for a minute per ask.
const askTimeout = 20 * time.Second

// childArgs are child ask's flags for one bash ask of session as agent.
func (r *isoRig) childArgs(session, agent, value string, extra ...string) []string {
	args := []string{"ask", "--parent", "parent", "--session", session, "--agent", agent,
		"--surface", "bash", "--value", value, "--root", r.root, "--timeout", askTimeout.String()}
	if r.m.isolated {
		args = append(args, "--broker-user", strconv.Itoa(brokerUID))
	}
	return append(args, extra...)
}

// ask runs one child ask as the child's user and waits for it. An ask
// that waits out its timeout ends the campaign: nothing here should.
func (r *isoRig) ask(session, agent, value string) answer {
	cmd := r.command(r.t.Context(), r.m.childCred(), r.childHome, "child", r.childArgs(session, agent, value)...)
	cmd.WaitDelay = time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	a := answer{value: value, code: -1}
	err := cmd.Run()
	a.took = time.Since(start)
	if cmd.ProcessState != nil {
		a.code = cmd.ProcessState.ExitCode()
		a.pid = cmd.ProcessState.Pid()
	}
	if err != nil && a.code < 0 {
		a.stderr = err.Error()
	}
	a.stderr += stderr.String()
	json.Unmarshal(stdout.Bytes(), &a.out)
	if a.took >= askTimeout {
		r.t.Fatalf("a child waited out its %s timeout (is the broker answering?): exit %d %+v\n%s", askTimeout, a.code, a.out, a.stderr)
	}
	return a
}

// startAsk starts a child ask without waiting; its stdout is kept.
func (r *isoRig) startAsk(session, agent, value string) (*process, *syncBuffer) {
	cmd := r.command(context.Background(), r.m.childCred(), r.childHome, "child", r.childArgs(session, agent, value)...)
	out := &syncBuffer{}
	cmd.Stdout = out
	return r.s.startCmd(r.t, cmd), out
}

// requestOf waits for the request the child with pid wrote in parent's
// inbox and returns its id.
func (r *isoRig) requestOf(pid int) string {
	r.t.Helper()
	dir := filepath.Join(r.root, "sessions", "parent", "requests")
	var id string
	waitFor(r.t, fmt.Sprintf("the request of child %d", pid), func() bool {
		names, _ := readNames(dir)
		for _, name := range names {
			if !mailbox.IsMailName(name) {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			if req, _, err := wire.DecodeRequest(data); err == nil && req.RequesterPID == pid {
				id = req.ID
				return true
			}
		}
		return false
	})
	return id
}

// probe runs isolationprobe as the child's user (the attacker) and returns
// its output lines.
func (r *isoRig) probe(args ...string) []string {
	r.t.Helper()
	cmd := r.command(r.t.Context(), r.m.childCred(), r.childHome, "isolationprobe", args...)
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w: %s", err, exit.Stderr)
		}
		r.t.Fatalf("isolationprobe %v: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// plant has the attacker (the child's user) copy data to each of dsts, and
// returns each outcome: "ok" or the errno ("EACCES").
func (r *isoRig) plant(data []byte, dsts ...string) []string {
	r.t.Helper()
	src, err := os.CreateTemp(r.base, "plant-*.json")
	if err != nil {
		r.t.Fatal(err)
	}
	defer os.Remove(src.Name())
	if _, err := src.Write(data); err != nil {
		r.t.Fatal(err)
	}
	src.Close()
	if err := os.Chmod(src.Name(), 0o644); err != nil {
		r.t.Fatal(err)
	}
	lines := r.probe(append([]string{"write", src.Name()}, dsts...)...)
	if len(lines) != len(dsts) {
		r.t.Fatalf("isolationprobe write: %q", lines)
	}
	outcomes := make([]string, len(lines))
	for i, l := range lines {
		outcomes[i], _, _ = strings.Cut(l, " ")
	}
	return outcomes
}

// lineProbe is a long-running isolationprobe fed lines on stdin, whose
// output lines arrive on a channel (closed when it exits).
type lineProbe struct {
	p     *process
	in    io.WriteCloser
	lines chan string
}

// startProbe starts isolationprobe as cred, fed and read line by line.
func (r *isoRig) startProbe(cred *syscall.Credential, args ...string) *lineProbe {
	r.t.Helper()
	return r.startProbeOf(cred, "isolationprobe", args...)
}

// startProbeOf is startProbe for another of the suite's programs.
func (r *isoRig) startProbeOf(cred *syscall.Credential, name string, args ...string) *lineProbe {
	r.t.Helper()
	home := r.childHome
	if cred.Uid == r.m.brokerCred().Uid && r.m.isolated {
		home = r.brokerHome
	}
	cmd := r.command(context.Background(), cred, home, name, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	// A pipe of our own rather than StdoutPipe, which Wait closes (in the
	// harness's goroutine) possibly before every line was read.
	pr, pw, err := os.Pipe()
	if err != nil {
		r.t.Fatal(err)
	}
	cmd.Stdout = pw
	lp := &lineProbe{p: r.s.startCmd(r.t, cmd), in: in, lines: make(chan string, 1<<14)}
	pw.Close()
	go func() {
		defer close(lp.lines)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lp.lines <- sc.Text()
		}
	}()
	r.t.Cleanup(func() { in.Close() })
	return lp
}

// line reads the probe's next output line, within the wait limit.
func (lp *lineProbe) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-lp.lines:
		if !ok {
			t.Fatalf("isolationprobe ended: %v\n%s", lp.p.err, lp.p.stderr)
		}
		return l
	case <-time.After(waitLimit):
		t.Fatalf("isolationprobe said nothing for %s\n%s", waitLimit, lp.p.stderr)
		return ""
	}
}

// finish closes the probe's stdin, which ends it, and returns the lines it
// printed since the last read.
func (lp *lineProbe) finish(t *testing.T) []string {
	t.Helper()
	lp.in.Close()
	var rest []string
	deadline := time.After(waitLimit)
	for {
		select {
		case l, ok := <-lp.lines:
			if !ok {
				return rest
			}
			rest = append(rest, l)
		case <-deadline:
			t.Fatalf("isolationprobe did not end within %s\n%s", waitLimit, lp.p.stderr)
		}
	}
}

// logEntries returns the review log's entries about request id: their
// events, and each whole line.
func (r *isoRig) logEntries(id string) (events, lines []string) {
	r.t.Helper()
	data, err := os.ReadFile(r.log)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		r.t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		var e struct {
			Event     string `json:"event"`
			RequestID string `json:"requestId"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.RequestID == id {
			events = append(events, e.Event)
			lines = append(lines, line)
		}
	}
	return events, lines
}

// brokerDecided says whether the review log holds the broker's decision
// on request id: a rule's, a session grant's or the terminal's. The broker
// writes that line after the answer a child may already have read, so
// with wait it looks again until the line is there or a few seconds
// passed; without, it looks once (for a request the broker never saw).
func (r *isoRig) brokerDecided(id string, wait bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		events, _ := r.logEntries(id)
		for _, e := range events {
			switch e {
			case "forwarded_permission.auto_approved", "forwarded_permission.auto_denied",
				"forwarded_permission.approved", "forwarded_permission.denied":
				return true
			}
		}
		if !wait || time.Now().After(deadline) {
			return false
		}
		pause(10 * time.Millisecond)
	}
}

// decidedLocally says whether a is an answer of the child's own grants
// (decidedBy session_approval, not forwarded): the broker never saw it.
func decidedLocally(a answer) bool {
	var d struct {
		Kind string `json:"kind"`
	}
	json.Unmarshal(a.out.DecidedBy, &d)
	return a.code == 0 && a.out.Approved && d.Kind == "session_approval"
}

// ownerOf is the uid that owns path, or -1.
func ownerOf(path string) int {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return -1
	}
	return int(st.Uid)
}

// journalJSON is a well-formed version 2 grant journal of side and
// session holding one grant of pattern on bash, facts and all: what a
// same-uid attacker writes by hand (issue 18).
func journalJSON(side, session, pattern string) []byte {
	return []byte(`{"version":2,"side":"` + side + `","session":"` + session + `","grants":[{"surface":"bash","pattern":"` + pattern +
		`","requestId":"perm-1757000000123-4f2a9c","asked":{"surface":"bash","value":"make deploy"},"agent":"Explore",` +
		`"recordedAt":"2026-07-15T10:11:12.345Z","decidedBy":{"kind":"user","via":"dialog"},"edited":false}]}` + "\n")
}

// count is how many of outcomes are want.
func count(outcomes []string, want string) int {
	n := 0
	for _, o := range outcomes {
		if o == want {
			n++
		}
	}
	return n
}
