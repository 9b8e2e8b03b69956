package reliability

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// isoHappyPath is the honest path in each mode, and what the child's user
// can and cannot touch. A rule allows git status and denies a force push;
// an ask for the terminal is relayed (--terminal relay) to an upper
// session served by a peer at the broker's user, which answers "yes, for
// this subagent only" (approved_for_session): the broker records the
// grant (isolation: the vouched journal, written by the broker's user) or
// the child does (same uid: the child journal), and the subagent's next
// matching ask is answered by the child without reaching the broker. A
// sibling session of the same uid does not get it.
//
// Then: every response and heartbeat is owned by the broker's user, and a
// process at the child's uid cannot signal the broker, read its cwd,
// list requests/ or courier/, nor write into responses/, serving/,
// courier/, the vouched journal, the review log or the config (isolation;
// in the same-uid mode all of it succeeds, recorded).
func (s *suite) isoHappyPath(t *testing.T, m isoMode, f *isoFigures) {
	r := s.newIsoRig(t, m, isoConfig(""))
	upperArgs := []string{"upper", "--root", r.root, "--session", "top"}
	if m.isolated {
		upperArgs = append(upperArgs, "--broker-uid", strconv.Itoa(brokerUID), "--group", strconv.Itoa(askGID))
	}
	// The broker first: in the isolation mode it makes the tree the
	// upper session's inbox goes in.
	b := r.broker("--terminal", "relay", "--parent", "top")
	upper := r.startProbe(m.brokerCred(), upperArgs...)
	waitFor(t, "the upper session's heartbeat", func() bool {
		if upper.p.exited() {
			t.Fatalf("the upper session's peer exited: %v\n%s", upper.p.err, upper.p.stderr)
		}
		_, err := os.Stat(filepath.Join(r.root, "serving", "top.json"))
		return err == nil
	})

	allow := r.ask("sub", "Explore", isoAllow)
	deny := r.ask("sub", "Explore", isoDeny)
	if allow.code != 0 || !strings.Contains(string(allow.out.DecidedBy), `"kind":"rule"`) {
		t.Errorf("git status: exit %d %+v %s", allow.code, allow.out, allow.stderr)
	}
	if deny.code != 1 || deny.reason() != "No force pushes" {
		t.Errorf("a force push: exit %d %+v %s", deny.code, deny.out, deny.stderr)
	}
	first := r.ask("sub", "Explore", isoHuman)
	if first.code != 0 || first.out.State != "approved_for_session" {
		t.Fatalf("the relayed ask: exit %d %+v\n%s\nbroker:\n%s\nupper:\n%s", first.code, first.out, first.stderr, b.stderr, upper.p.stderr)
	}
	if l := upper.line(t); l != "answered "+first.out.RequestID {
		t.Errorf("the upper session answered %q, want the relayed ask %s", l, first.out.RequestID)
	}

	journal := filepath.Join(r.root, "courier", "grants", "child", "sub.json")
	wantOwner, wantMode := childUID, os.FileMode(0o600)
	if m.isolated {
		journal = filepath.Join(r.root, "courier", "vouched", strconv.Itoa(childUID), "sub.json")
		wantOwner, wantMode = brokerUID, 0o644
	}
	fi, err := os.Lstat(journal)
	if err != nil {
		t.Errorf("the grant of the approved_for_session answer was not recorded: %v", err)
	} else if owner := ownerOf(journal); owner != wantOwner || fi.Mode().Perm() != wantMode {
		t.Errorf("%s: uid %d mode %v, want uid %d mode %v", journal, owner, fi.Mode().Perm(), wantOwner, wantMode)
	}
	data, _ := os.ReadFile(journal)
	if !strings.Contains(string(data), `"pattern":"make deploy *"`) {
		t.Errorf("%s holds %s, want the grant make deploy *", journal, data)
	}

	next := r.ask("sub", "Explore", isoHuman+" --dry-run")
	nextLocal := decidedLocally(next)
	if !nextLocal || r.brokerDecided(next.out.RequestID, false) {
		t.Errorf("the next matching ask was not answered by the child alone: exit %d %+v %s", next.code, next.out, next.stderr)
	}
	sibling := r.ask("sibling", "Explore", isoHuman+" --dry-run")
	if decidedLocally(sibling) {
		t.Errorf("a sibling session took the grant of another: %+v", sibling.out)
	}
	listed := r.command(t.Context(), m.childCred(), r.childHome, "child", "grants", "list", "--session", "sub", "--root", r.root)
	if m.isolated {
		listed.Args = append(listed.Args, "--broker-user", strconv.Itoa(brokerUID))
	}
	out, err := listed.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"make deploy *"`) {
		t.Errorf("child grants list: %v\n%s", err, out)
	}
	revoked := "n/a"
	if m.isolated {
		// Revoking is the broker's user's: the child cannot write that
		// journal, and says who can.
		childRevoke := r.command(t.Context(), m.childCred(), r.childHome, "child", "grants", "revoke", "--session", "sub",
			"--root", r.root, "--broker-user", strconv.Itoa(brokerUID), "--all")
		out, err := childRevoke.CombinedOutput()
		if childRevoke.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "broker grants revoke") {
			t.Errorf("child grants revoke in the isolation mode: %v\n%s", err, out)
		}
		brokerRevoke := r.command(t.Context(), m.brokerCred(), r.brokerHome, "broker", "grants", "revoke", "--session", "sub",
			"--root", r.root, "--vouched-uid", strconv.Itoa(childUID), "--all")
		if out, err := brokerRevoke.CombinedOutput(); err != nil {
			t.Errorf("broker grants revoke --vouched-uid as the broker's user: %v\n%s", err, out)
		}
		again := r.ask("sub", "Explore", isoHuman+" --dry-run")
		revoked = strconv.FormatBool(!decidedLocally(again))
		if decidedLocally(again) {
			t.Errorf("after the broker revoked the vouched grant, the child still answered alone: %+v", again.out)
		}
	}
	// Who owns what the broker wrote, while it serves: the heartbeats, and
	// the answers (which stay in the isolation mode: the child cannot
	// remove them; the same-uid child removes its own).
	var files, byBroker int
	var strays []string
	for _, dir := range []string{"sessions/parent/responses", "sessions/top/responses", "serving"} {
		names, _ := readNames(filepath.Join(r.root, dir))
		for _, name := range names {
			path := filepath.Join(r.root, dir, name)
			files++
			if ownerOf(path) == int(m.brokerCred().Uid) {
				byBroker++
			} else {
				strays = append(strays, fmt.Sprintf("%s (uid %d)", path, ownerOf(path)))
			}
		}
	}
	if files == 0 || len(strays) > 0 {
		t.Errorf("of %d files in responses/ and serving/, not the broker's user's: %v", files, strays)
	}

	// Whether the child's user can stop the broker or read its cwd
	// (what a plugin did in issue 18, and any same-uid process can).
	var reach []string
	for _, l := range append(r.probe("signal", strconv.Itoa(b.pid())), r.probe("readlink", fmt.Sprintf("/proc/%d/cwd", b.pid()))...) {
		o, _, _ := strings.Cut(l, " ")
		reach = append(reach, o)
	}
	b.stop(t)
	upper.finish(t)

	// What the child's user can do to the broker's files.
	targets := []string{
		filepath.Join(r.root, "sessions", "parent", "responses", "perm-planted.json"),
		filepath.Join(r.root, "serving", "planted.json"),
		filepath.Join(r.root, "courier", "planted.json"),
		filepath.Join(r.root, "courier", "grants", "broker", "parent.json"),
		journal,
		r.log,
		r.config,
	}
	outcomes := r.plant([]byte("{}\n"), targets...)
	var listings []string
	for _, l := range r.probe("list", filepath.Join(r.root, "sessions", "parent", "requests"), filepath.Join(r.root, "courier")) {
		o, _, _ := strings.Cut(l, " ")
		listings = append(listings, o)
	}
	denied := count(outcomes, "EACCES") + count(listings, "EACCES")
	attempts := len(outcomes) + len(listings)
	reachDenied := count(reach, "EPERM") + count(reach, "EACCES")
	f.add("happy_allow", allow.code, "happy_deny", deny.code, "happy_for_session", first.out.State, "next_ask_local", nextLocal, "revoked_by_broker_user", revoked,
		"files_by_broker_user", fmt.Sprintf("%d/%d", byBroker, files), "child_uid_writes_and_lists_denied", fmt.Sprintf("%d/%d", denied, attempts),
		"child_uid_signal_and_proc_cwd_of_broker", strings.Join(reach, ","))
	if m.isolated {
		if denied != attempts {
			t.Errorf("isolation: the child's uid: writes %v to %v, lists %v of requests/ and courier/", outcomes, targets, listings)
		}
		if reachDenied != len(reach) {
			t.Errorf("isolation: the child's uid may signal the broker or read its cwd: %v", reach)
		}
	} else {
		t.Logf("same uid: the child's uid wrote %d of %d of the broker's files (its review log and config included), listed %d of 2 of its directories, and could signal it and read its cwd: %v",
			count(outcomes, "ok"), len(outcomes), count(listings, "ok"), reach)
	}
}
