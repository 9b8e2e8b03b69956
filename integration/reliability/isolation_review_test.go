package reliability

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIsolationReview runs the attacks of the adversarial review of the
// isolation mode (issue 18, session 25) that need the real binaries and
// two real uids: the broker must not be root for them, since root reads
// and lists whatever a child makes unreadable. Each is the regression test
// of what it found. Run with -run TestIsolationReview, as root.
func TestIsolationReview(t *testing.T) {
	if testing.Short() {
		t.Skip("the review's attacks build and run the real binaries")
	}
	if os.Geteuid() != 0 {
		t.Skip("the review's attacks run the broker and the child as two real uids (61001, 61002): they need root")
	}
	s := &suite{bin: buildBinaries(t)}
	m := isoMode{name: "isolated", isolated: true}
	t.Run("planted_directories", func(t *testing.T) { s.reviewPlantedDirectories(t, m) })
	t.Run("unreadable_requests", func(t *testing.T) { s.reviewUnreadableRequests(t, m) })
	t.Run("leased_requests", func(t *testing.T) { s.reviewLeasedRequests(t, m) })
}

// asChild runs script with sh as the child's user (the attacker: a
// subagent's command), and fails the test if it fails.
func (r *isoRig) asChild(script string) {
	r.t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(cleanEnv(), "HOME="+r.childHome)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: r.m.childCred()}
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("as uid %d: %s: %v\n%s", childUID, script, err, out)
	}
}

// A member of the ask group may create anything in tmp/ and requests/: a
// directory, a symlink to one. Before the fix the broker's start-up check
// of the tree walked into them and refused to serve ("owned by another
// user", "symbolic link (a directory of the mailbox tree)"): one mkdir by
// a subagent kept the broker from ever serving the mailbox again.
func (s *suite) reviewPlantedDirectories(t *testing.T, m isoMode) {
	r := s.newIsoRig(t, m, isoConfig(""))
	b := r.broker()
	requests := filepath.Join(r.root, "sessions", "parent", "requests")
	tmp := filepath.Join(r.root, "tmp")
	r.asChild(strings.Join([]string{
		"mkdir -p " + tmp + "/planted/deeper",
		"chmod 0777 " + tmp + "/planted",
		"ln -s / " + tmp + "/link",
		"mkdir -p " + requests + "/planted/deeper",
		"ln -s / " + requests + "/link",
	}, " && "))
	b.stop(t)
	b = r.broker() // fails the test if it refuses to serve
	if a := r.ask("child", "Explore", isoAllow); a.code != 0 || !a.out.Approved {
		t.Errorf("after the plants, %q: exit %d %+v\n%s", isoAllow, a.code, a.out, a.stderr)
	}
	b.stop(t)
}

// A request file its owner made unreadable (mode 0000) is one the broker
// can never read: the owner did it, not a passing fault. Before the fix
// the broker kept it and tried again at every rescan, logging an error
// each time: 1,000 such files made it write about 600 review-log lines a
// second, for as long as the files stayed (past every intake bound, since
// none was ever admitted), which rotates the operator's real entries out
// of the review log. It is refused once and removed (the sticky inbox is
// the broker's: it may remove any file in it).
func (s *suite) reviewUnreadableRequests(t *testing.T, m isoMode) {
	const n = 50
	r := s.newIsoRig(t, m, isoConfig(""))
	b := r.broker()
	requests := filepath.Join(r.root, "sessions", "parent", "requests")
	r.asChild("umask 0777 && i=0 && while [ $i -lt 50 ]; do : > " + requests + "/perm-unreadable-$i.json; i=$((i+1)); done")
	r.refusedOnce(b, requests, "perm-unreadable-", n)
}

// The same with a write lease (fcntl F_SETLEASE, which the owner of a
// file may take) on each of its request files: the broker's non-blocking
// open fails with EWOULDBLOCK, and the owner takes the lease again once
// the kernel breaks it. Before the fix each was kept and tried again at
// every rescan, an error logged each time, for as long as the owner won
// the race to take the lease again: 940 review-log lines about 20 files
// in the 48 s until the broker's open won it, in the run of this test
// against the code before the fix.
func (s *suite) reviewLeasedRequests(t *testing.T, m isoMode) {
	const n = 20
	_, self, _, _ := runtime.Caller(0)
	build := exec.Command("go", "build", "-o", s.bin+string(filepath.Separator), "./integration/reliability/testdata/leaseprobe")
	build.Dir = filepath.Join(filepath.Dir(self), "..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building leaseprobe: %v\n%s", err, out)
	}
	r := s.newIsoRig(t, m, isoConfig(""))
	b := r.broker()
	requests := filepath.Join(r.root, "sessions", "parent", "requests")
	lp := r.startProbeOf(m.childCred(), "leaseprobe", requests, strconv.Itoa(n))
	if l := lp.line(t); l != "leased "+strconv.Itoa(n) {
		t.Fatalf("leaseprobe: %q\n%s", l, lp.p.stderr)
	}
	r.refusedOnce(b, requests, "perm-leased-", n)
	lp.finish(t)
}

// refusedOnce waits until the broker b removed every request file of
// prefix in requests, checks that it still answers, and that it logged
// at most two review entries for each of the n files.
func (r *isoRig) refusedOnce(b *process, requests, prefix string, n int) {
	t := r.t
	t.Helper()
	took := waitFor(t, "the "+prefix+" requests removed", func() bool {
		names, err := readNames(requests)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if strings.HasPrefix(name, prefix) {
				return false
			}
		}
		return true
	})
	if a := r.ask("child", "Explore", isoAllow); a.code != 0 || !a.out.Approved {
		t.Errorf("%q: exit %d %+v\n%s", isoAllow, a.code, a.out, a.stderr)
	}
	b.stop(t)
	data, err := os.ReadFile(r.log)
	if err != nil {
		t.Fatal(err)
	}
	logged := strings.Count(string(data), prefix)
	if logged > 2*n {
		t.Errorf("%d review-log lines about %d %s requests, want at most 2 each", logged, n, prefix)
	}
	figures(t, "files", n, "removed_within", took.Round(time.Millisecond), "log_lines", logged)
}
