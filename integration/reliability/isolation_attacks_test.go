package reliability

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// isoForgedApprovals is issue 18's first attack: a process at the child's
// uid writes a correctly bound approval of an ask the rules deny before
// the broker answers.
//
// (A) Given the id: the attacker is the subagent that made the request,
// so it knows the id and may read its own request file; it computes the
// digest and publishes the approval while the broker is stopped (SIGSTOP,
// every thread checked), so that it is first by construction. Same uid:
// every forgery must be taken (deterministic), the broker kept stopped
// until the child has its answer: running, the broker would answer over
// the forgery, which it did not write, and a child that had not read it
// yet would take the broker's deny. Isolation: every write must fail with
// EACCES, and the broker's deny must come back.
//
// (B) Watching, the broker running (the issue's own run): the attacker
// watches requests/, and tmp/ where a child stages its request before the
// rename, and forges for each request it sees. In the isolation mode the
// watch itself is refused (both are 1730: the group may create, not
// list); the same-uid figure is a race, recorded.
func (s *suite) isoForgedApprovals(t *testing.T, m isoMode, f *isoFigures) {
	n := s.scale(20, 100)
	r := s.newIsoRig(t, m, isoConfig(""))
	b := r.broker()

	forger := r.startProbe(m.childCred(), "forge", "--root", r.root, "--session", "parent")
	approved, brokerDenied, loggedByBroker := 0, 0, 0
	outcomes := make([]string, 0, n)
	for i := range n {
		b.freeze(t)
		child, stdout := r.startAsk(fmt.Sprintf("victim%d", i), "Explore", isoDeny)
		id := r.requestOf(child.pid())
		fmt.Fprintln(forger.in, id)
		outcome, _, _ := strings.Cut(forger.line(t), " ")
		outcomes = append(outcomes, outcome)
		if !m.isolated {
			// The broker answers over a bound answer it did not write
			// (d0e4328), so the forgery is first only while the child
			// reads it before the broker runs again.
			waitFor(t, "the victim's answer", child.exited)
		}
		b.signal(syscall.SIGCONT)
		waitFor(t, "the victim's answer", child.exited)
		switch code := child.cmd.ProcessState.ExitCode(); {
		case code == 0 && strings.Contains(stdout.String(), `"approved":true`):
			approved++
		case code == 1 && strings.Contains(stdout.String(), "No force pushes"):
			brokerDenied++
		default:
			// The set-up is broken (the broker did not answer): the
			// other victims would each wait out their timeout.
			t.Fatalf("victim %d: exit %d %s\n%s\nbroker:\n%s", i, code, stdout, child.stderr, b.stderr)
		}
		if r.brokerDecided(id, m.isolated) {
			loggedByBroker++
		}
	}
	forger.finish(t)
	writes := map[string]int{}
	for _, o := range outcomes {
		writes[o]++
	}
	f.add("forged_given_id", fmt.Sprintf("%d/%d_approved", approved, n), "forge_writes", fmtCounts(writes),
		"forged_given_id_broker_denied", brokerDenied, "forged_given_id_broker_logged", loggedByBroker)
	if m.isolated {
		if approved != 0 || writes["write:EACCES"] != n {
			t.Errorf("isolation: %d of %d forged approvals taken; the attacker's writes: %v", approved, n, writes)
		}
	} else if approved != n {
		// Deterministic: the broker was stopped until the forgery was on
		// disk. Fewer means the same-uid attack stopped working, and this
		// campaign's account of it (docs/THREAT-MODEL.md) is stale.
		t.Errorf("same uid: %d of %d forgeries written first were taken (the attack is expected to work here); writes %v", approved, n, writes)
	}

	// B. The watcher, against a running broker.
	watcher := r.startProbe(m.childCred(), "forge", "--root", r.root, "--session", "parent", "--watch")
	started := watcher.line(t)
	racerApproved, racerDenied, other := 0, 0, 0
	for i := range n {
		switch a := r.ask(fmt.Sprintf("racer%d", i), "Explore", isoDeny); {
		case a.out.Approved || a.code == 0:
			racerApproved++
		case a.code == 1 && a.reason() == "No force pushes":
			racerDenied++
		default:
			other++ // unavailable: a forgery refused, never an approval
		}
	}
	forged := 0
	for _, l := range watcher.finish(t) {
		if strings.HasPrefix(l, "ok ") {
			forged++
		}
	}
	b.stop(t)
	f.add("watcher", strings.Fields(started)[0], "watched_forgeries_written", forged, "watched_forged_approved", fmt.Sprintf("%d/%d", racerApproved, n),
		"watched_broker_denied", racerDenied, "watched_other", other)
	if m.isolated {
		if started != "watch:EACCES -" || racerApproved != 0 || racerDenied != n {
			t.Errorf("isolation: the attacker's watch of requests/: %q, want watch:EACCES; %d of %d approved, %d denied by the broker",
				started, racerApproved, n, racerDenied)
		}
	} else if started != "watching -" {
		t.Errorf("same uid: the attacker could not watch requests/: %q", started)
	} else {
		t.Logf("same uid, broker running: %d of %d denied force pushes came back approved by a watching forger", racerApproved, n)
	}
}

// fmtCounts is m as "key:count,…" in key order, for a figures line.
func fmtCounts(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+":"+strconv.Itoa(v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// isoBrokerJournal is the second attack: a hand-written broker journal,
// a valid-looking version 2 `bash "*"`, written while the broker is
// stopped, then the broker started. Same uid: it is loaded, and answers
// asks the terminal would deny. Isolation: the attacker cannot write it.
func (s *suite) isoBrokerJournal(t *testing.T, m isoMode, f *isoFigures) {
	n := s.scale(5, 20)
	r := s.newIsoRig(t, m, isoConfig(""))
	// The tree as a broker that ran and stopped leaves it.
	b := r.broker()
	b.stop(t)
	path := filepath.Join(r.root, "courier", "grants", "broker", "parent.json")
	outcome := r.plant(journalJSON("broker", "parent", "*"), path)[0]
	b = r.broker()
	allowed := 0
	for i := range n {
		a := r.ask(fmt.Sprintf("c%d", i), "Explore", isoHuman)
		if a.out.Approved {
			allowed++
			if !strings.Contains(string(a.out.DecidedBy), `"kind":"session_approval","surface":"bash","pattern":"*"`) {
				t.Errorf("approved, but not by the planted grant: %s", a.out.DecidedBy)
			}
		}
	}
	b.stop(t)
	loaded := b.stderr.Contains("1 whole-session grant loaded from " + path)
	f.add("broker_journal_write", outcome, "broker_journal_loaded", loaded, "broker_journal_asks_allowed", fmt.Sprintf("%d/%d", allowed, n))
	if m.isolated {
		if outcome != "EACCES" || loaded || allowed != 0 {
			t.Errorf("isolation: the planted broker journal: write %s, %d of %d asks allowed by it\n%s", outcome, allowed, n, b.stderr)
		}
		return
	}
	if outcome != "ok" || !loaded || allowed != n {
		t.Errorf("same uid: the planted broker journal: write %s, %d of %d asks allowed (the attack is expected to work here)\n%s", outcome, allowed, n, b.stderr)
	}
	t.Logf("same uid: the hand-written journal was loaded (the broker listed it at start) and allowed %d of %d asks", allowed, n)
}

// isoPlantedChildGrants is the third attack: grants planted where a child
// takes its own "this subagent only" grants from, so that the subagent's
// next matching ask is answered by the child, never reaching the broker.
// The attacker writes a child journal (the same-uid store) and a vouched
// journal (the isolation mode's). Same uid: the child answers locally.
// Isolation: both writes fail; and a vouched journal that is not the
// broker's user's (made here by root, as if the attacker had found a way)
// is ignored: the ask goes to the broker.
func (s *suite) isoPlantedChildGrants(t *testing.T, m isoMode, f *isoFigures) {
	r := s.newIsoRig(t, m, isoConfig(""))
	b := r.broker()
	childJournal := filepath.Join(r.root, "courier", "grants", "child", "victim.json")
	vouched := filepath.Join(r.root, "courier", "vouched", strconv.Itoa(childUID), "victim.json")
	outcomes := []string{
		r.plant(journalJSON("child", "victim", "make deploy *"), childJournal)[0],
		r.plant(journalJSON("vouched", "victim", "make deploy *"), vouched)[0],
	}
	a := r.ask("victim", "Explore", isoHuman+" --prod")
	local := decidedLocally(a)
	toBroker := r.brokerDecided(a.out.RequestID, m.isolated)
	f.add("child_journal_write", outcomes[0], "vouched_journal_write", outcomes[1], "planted_grant_answered_locally", local)
	if !m.isolated {
		b.stop(t)
		if outcomes[0] != "ok" || !local || toBroker {
			t.Errorf("same uid: planted child journal: write %s, answered locally %v, broker decided %v (the attack is expected to work here): %+v %s",
				outcomes[0], local, toBroker, a.out, a.stderr)
		}
		t.Logf("same uid: the child answered %q from the planted journal without asking the broker", a.value)
		return
	}
	if outcomes[0] != "EACCES" || outcomes[1] != "EACCES" {
		t.Errorf("isolation: the attacker wrote a grant journal: child %s, vouched %s", outcomes[0], outcomes[1])
	}
	if local || a.out.Approved || !toBroker {
		t.Errorf("isolation: after the plants, answered locally %v, approved %v, broker decided %v: %+v %s", local, a.out.Approved, toBroker, a.out, a.stderr)
	}

	// As if the attacker could create a file there: root plants a vouched
	// journal the child's user owns, where the child looks, under
	// directories made as the broker makes them. The child must refuse it
	// (a child journal it never reads in this mode: that store is under
	// courier/grants/, which the child's uid cannot reach).
	dir := filepath.Dir(vouched)
	if err := os.MkdirAll(dir, 0o710); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := errors.Join(os.Chown(d, brokerUID, askGID), os.Chmod(d, 0o710)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(vouched, journalJSON("vouched", "victim", "make deploy *"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(vouched, childUID, childUID); err != nil {
		t.Fatal(err)
	}
	a = r.ask("victim", "Explore", isoHuman+" --prod")
	local = decidedLocally(a)
	toBroker = r.brokerDecided(a.out.RequestID, true)
	b.stop(t)
	f.add("vouched_journal_of_child_uid_answered_locally", local)
	if local || a.out.Approved || !toBroker || !strings.Contains(a.stderr, "refused") {
		t.Errorf("isolation: a vouched journal owned by the child's uid: answered locally %v, approved %v, broker decided %v: %+v %s",
			local, a.out.Approved, toBroker, a.out, a.stderr)
	}
	t.Logf("isolation: a vouched journal owned by uid %d: the child said:\n%s", childUID, strings.TrimSpace(a.stderr))
}

// isoAgentClaim is the fifth attack: the child claims an agent name whose
// overrides allow what the global rules deny. In the isolation mode the
// override applies only when the requesting uid (the request file's owner)
// is in agents.<name>.users; in the same-uid mode the claim is believed,
// and the review log says it was claimed.
func (s *suite) isoAgentClaim(t *testing.T, m isoMode, f *isoFigures) {
	agents := func(uid int) string {
		return fmt.Sprintf(`{"reviewer": {"permission": {"bash": {"git push --force*": "allow"}}, "users": [%d]}}`, uid)
	}
	r := s.newIsoRig(t, m, isoConfig(agents(otherUID)))
	b := r.broker()
	control := r.ask("c0", "Explore", isoDeny)
	other := r.ask("c1", "reviewer", isoDeny)
	r.brokerDecided(other.out.RequestID, true) // the log's line, written after the answer
	_, otherLines := r.logEntries(other.out.RequestID)
	b.stop(t)
	r.writeConfig(isoConfig(agents(childUID)))
	b = r.broker()
	own := r.ask("c2", "reviewer", isoDeny)
	r.brokerDecided(own.out.RequestID, true)
	_, ownLines := r.logEntries(own.out.RequestID)
	b.stop(t)
	f.add("claim_users_other_allowed", other.out.Approved, "claim_users_child_allowed", own.out.Approved)
	if control.code != 1 || control.out.Approved {
		t.Errorf("without a claim a force push was not denied: exit %d %+v %s", control.code, control.out, control.stderr)
	}
	if !own.out.Approved {
		t.Errorf("agent reviewer with users [%d], asked by uid %d: not allowed: exit %d %+v %s", childUID, childUID, own.code, own.out, own.stderr)
	}
	if m.isolated {
		if other.out.Approved || other.code != 1 {
			t.Errorf("isolation: uid %d claiming reviewer (users [%d]) was allowed the force push: exit %d %+v", childUID, otherUID, other.code, other.out)
		}
		t.Logf("isolation: claiming reviewer (users [%d]) as uid %d, the review log:\n%s", otherUID, childUID, strings.Join(otherLines, "\n"))
		uid := fmt.Sprintf(`"requesterUid":%d`, childUID)
		if got := strings.Join(otherLines, "\n"); !strings.Contains(got, `"agentTrust":"not-vouched"`) || !strings.Contains(got, uid) {
			t.Errorf("isolation: the review log does not say the agent was not vouched for, or not the requester's uid:\n%s", got)
		}
		if got := strings.Join(ownLines, "\n"); !strings.Contains(got, `"agentTrust":"vouched"`) || !strings.Contains(got, uid) {
			t.Errorf("isolation: the review log does not say the agent was vouched for, or not the requester's uid:\n%s", got)
		}
		return
	}
	if !other.out.Approved {
		t.Errorf("same uid: the claimed agent's override did not apply (expected: claims are believed there): exit %d %+v %s", other.code, other.out, other.stderr)
	}
	if !strings.Contains(strings.Join(otherLines, "\n"), `"agentTrust":"claimed"`) {
		t.Errorf("same uid: the review log does not say the agent name was claimed:\n%s", strings.Join(otherLines, "\n"))
	}
	t.Logf("same uid: claiming reviewer allowed a force push the global rules deny; the log says claimed")
}
