package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// The isolation mode (issue 18) in one process: the test runs as root,
// the broker's user, and plays the children by giving their request
// files to other uids, as the kernel does for a child of another user.

const (
	// askerUID is the requesting child's user; askGID the ask group.
	askerUID = 61002
	askGID   = 61000
)

// needRoot skips a test that gives files to other users.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving a request file to another user needs root (CI runs these as root)")
	}
}

// isolatedLayout is a tree of the isolation mode with this process as
// the broker's user, prepared as broker serve --ask-group prepares it.
func isolatedLayout(t *testing.T) mailbox.Layout {
	t.Helper()
	layout := mailbox.Layout{Root: t.TempDir(), Isolation: &mailbox.Isolation{BrokerUID: os.Geteuid(), GID: askGID}}
	if err := layout.PrepareIsolated(); err != nil {
		t.Fatal(err)
	}
	return layout
}

// loggedFixture serves layout with config and a review log the test
// reads.
func loggedFixture(t *testing.T, layout mailbox.Layout, config string, term Terminal, configure func(*Broker)) (*fixture, string) {
	t.Helper()
	var cfg *rules.Config
	var err error
	if config == "" {
		cfg, err = rules.Load("")
	} else {
		cfg, err = rules.Parse("test.json", []byte(config))
	}
	if err != nil {
		t.Fatal(err)
	}
	policy, err := rules.NewPolicy(cfg, rules.Options{Protected: []string{layout.Root}})
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "review.jsonl")
	log, err := reviewlog.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	f := newFixtureWith(t, layout, term, func(b *Broker) {
		b.Policy, b.Log = policy, log
		if configure != nil {
			configure(b)
		}
	})
	return f, logPath
}

// dropAs publishes req into the serving session's inbox as a child of
// uid writes it: staged, given to uid, then renamed into place, so the
// broker never sees it owned by anyone else.
func dropAs(t *testing.T, layout mailbox.Layout, uid int, req wire.Request) string {
	t.Helper()
	data, err := wire.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.EnsureInbox("parent"); err != nil {
		t.Fatal(err)
	}
	staged := filepath.Join(t.TempDir(), req.ID+".json")
	if err := os.WriteFile(staged, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(staged, uid, -1); err != nil {
		t.Fatal(err)
	}
	path, err := layout.RequestPath("parent", req.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(staged, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// awaitResponse waits for the answer to id and decodes it.
func awaitResponse(t *testing.T, layout mailbox.Layout, id string) wire.Response {
	t.Helper()
	path, err := layout.ResponsePath("parent", id)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	w, err := mailbox.WatchFile(ctx, path, mailbox.WatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Wait(ctx); err != nil {
		t.Fatalf("no answer to %s: %v", id, err)
	}
	data, err := mailbox.ReadFileOf(path, layout.BrokerOwner())
	if err != nil {
		t.Fatal(err)
	}
	resp, _, err := wire.DecodeResponse(data)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// entriesOf are the review entries about request id.
func entriesOf(t *testing.T, logPath, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range readLog(t, logPath) {
		if e["requestId"] == id {
			out = append(out, e)
		}
	}
	return out
}

// A request another user wrote is the isolation mode's every request:
// the broker serves it, and the review log says whose it was (the uid
// the kernel gave the file, not a name the child chose). In the same-uid
// mode the same file is still refused unread: anyone else's file in the
// inbox is planted.
func TestRequestOfAnotherUser(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name     string
		isolated bool
	}{
		{"isolation mode serves it", true},
		{"same-uid mode refuses it", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout := mailbox.Layout{Root: t.TempDir()}
			if tt.isolated {
				layout = isolatedLayout(t)
			}
			f, logPath := loggedFixture(t, layout, testConfig, Headless{}, nil)
			req := ask(t, "git status --short")
			path := dropAs(t, f.layout, askerUID, req)
			if !tt.isolated {
				waitGone(t, path)
				f.stop()
				respPath, _ := layout.ResponsePath("parent", req.ID)
				if _, err := os.Lstat(respPath); err == nil {
					t.Errorf("the same-uid broker answered a request uid %d owns", askerUID)
				}
				refused := false
				for _, e := range readLog(t, logPath) {
					if e["event"] == reviewlog.ForwardingWarning && e["requestPath"] == path {
						refused = true
					}
				}
				if !refused {
					t.Errorf("no warning refusing %s in the review log", path)
				}
				return
			}
			resp := awaitResponse(t, f.layout, req.ID)
			if !resp.Approved {
				t.Errorf("the rules allow git status; got %+v", resp)
			}
			waitGone(t, path)
			f.stop()
			events := map[string]bool{}
			for _, e := range entriesOf(t, logPath, req.ID) {
				events[e["event"].(string)] = true
				if uid, ok := e["requesterUid"].(float64); !ok || int(uid) != askerUID {
					t.Errorf("%s: requesterUid %v, want %d", e["event"], e["requesterUid"], askerUID)
				}
			}
			for _, want := range []string{reviewlog.ForwardedAutoApproved, reviewlog.ForwardedApproved} {
				if !events[want] {
					t.Errorf("no %s entry for %s", want, req.ID)
				}
			}
		})
	}
}

// forSubagent is the operator's "yes, for this subagent only".
var forSubagent = decision.Decision{
	State: decision.StateApprovedForSession, DecidedBy: provenance.User{Via: provenance.ViaDialog}, SessionGrantWidth: wire.GrantProven,
}

// answeringTerminal answers every ask with d, and hands the ask over.
type answeringTerminal struct {
	d     decision.Decision
	asked chan Ask
}

func (a *answeringTerminal) Decide(_ context.Context, ask Ask) decision.Decision {
	a.asked <- ask
	return a.d
}

// In the isolation mode the broker keeps a child's "this subagent only"
// grants, since the child's own store would be the subagent's to write:
// in the requester's vouched journal, before the response exists, so the
// child's next ask finds them. Only what admission passes is kept (the
// hidden `bash *` is not), and the child reads them back as the broker's.
func TestThisSubagentOnlyIsVouchedBeforeTheAnswer(t *testing.T) {
	needRoot(t)
	layout := isolatedLayout(t)
	childLayout := mailbox.Layout{Root: layout.Root, Isolation: &mailbox.Isolation{BrokerUID: layout.Isolation.BrokerUID, GID: -1}}
	want := []rules.SessionGrant{{Surface: "bash", Pattern: "npm test *"}}
	loadVouched := func() ([]rules.SessionGrant, error) {
		j, err := grants.OpenVouched(childLayout, askerUID, "child")
		if err != nil {
			return nil, err
		}
		held := rules.NewSessionRules("")
		err = j.Load(held)
		return held.Grants(), err
	}
	checked := make(chan error, 1)
	term := &answeringTerminal{d: forSubagent, asked: make(chan Ask, 1)}
	f, logPath := loggedFixture(t, layout, "", term, func(b *Broker) {
		b.beforeResponse = func(req *wire.Request, d decision.Decision) {
			// The response is about to be written: the grant must be
			// kept by now.
			got, err := loadVouched()
			if err == nil && !reflect.DeepEqual(got, want) {
				err = fmt.Errorf("the vouched journal holds %v when the response is written, want %v", got, want)
			}
			checked <- err
		}
	})
	req := askWith(t, "child", "npm test", sixSuggestions)
	dropAs(t, f.layout, askerUID, req)
	a := <-term.asked
	if !a.Isolated || a.RequesterUID != askerUID {
		t.Errorf("the terminal was told the requester is uid %d (isolated %v), want %d", a.RequesterUID, a.Isolated, askerUID)
	}
	if err := <-checked; err != nil {
		t.Fatal(err)
	}
	resp := awaitResponse(t, f.layout, req.ID)
	if resp.State != wire.StateApprovedForSession {
		t.Errorf("answer %s, want %s", resp.State, wire.StateApprovedForSession)
	}
	j, _ := grants.OpenVouched(childLayout, askerUID, "child")
	fi, err := os.Stat(j.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("vouched journal mode %04o, want 0644", fi.Mode().Perm())
	}
	f.stop()
	found := false
	for _, e := range entriesOf(t, logPath, req.ID) {
		if e["event"] == reviewlog.ForwardedApproved && e["resolution"] == string(wire.StateApprovedForSession) {
			found = true
		}
	}
	if !found {
		t.Errorf("no approved_for_session entry for %s", req.ID)
	}
}

// A grant the broker could not keep is never claimed: when the vouched
// journal cannot be written (here a file someone else planted there,
// which is refused and left alone), the answer is approved once, and the
// failure is logged.
func TestThisSubagentOnlyNotKeptIsApprovedOnce(t *testing.T) {
	needRoot(t)
	layout := isolatedLayout(t)
	if err := layout.EnsureVouchedDir(askerUID); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(layout.VouchedDir(askerUID), "child.json")
	if err := os.WriteFile(planted, []byte(`{"version":2,"side":"vouched","session":"child","grants":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(planted, askerUID, -1); err != nil {
		t.Fatal(err)
	}
	term := &answeringTerminal{d: forSubagent, asked: make(chan Ask, 1)}
	f, logPath := loggedFixture(t, layout, "", term, nil)
	req := askWith(t, "child", "npm test", sixSuggestions)
	dropAs(t, f.layout, askerUID, req)
	<-term.asked
	resp := awaitResponse(t, f.layout, req.ID)
	if resp.State != wire.StateApproved || !resp.Approved {
		t.Errorf("answer %s (approved %v), want approved once", resp.State, resp.Approved)
	}
	f.stop()
	logged := false
	for _, e := range entriesOf(t, logPath, req.ID) {
		if e["event"] == reviewlog.ForwardingError && e["journal"] == planted {
			logged = true
		}
	}
	if !logged {
		t.Errorf("the failure to keep the grant is not in the review log")
	}
	if _, err := os.Stat(planted); err != nil {
		t.Errorf("the planted journal was not left as it was: %v", err)
	}
}

// In the isolation mode every answer is removed by the broker after the
// forwarding timeout (a child cannot remove it), which is no cause for a
// warning; in the same-uid mode a response left there is.
func TestUncollectedResponseWarnsOnlyInTheSameUIDMode(t *testing.T) {
	needRoot(t)
	for _, isolated := range []bool{false, true} {
		layout := mailbox.Layout{Root: t.TempDir()}
		if isolated {
			layout = isolatedLayout(t)
		}
		if err := layout.EnsureInbox("parent"); err != nil {
			t.Fatal(err)
		}
		if err := layout.WriteResponse("parent", "perm-1-aaaaaa", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		respPath, _ := layout.ResponsePath("parent", "perm-1-aaaaaa")
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(respPath, old, old); err != nil {
			t.Fatal(err)
		}
		logPath := filepath.Join(t.TempDir(), "review.jsonl")
		log, err := reviewlog.Open(logPath)
		if err != nil {
			t.Fatal(err)
		}
		b := &Broker{Layout: layout, Session: "parent", Log: log, ForwardingTimeout: time.Minute}
		b.prepare()
		b.housekeeping()
		log.Close()
		if _, err := os.Lstat(respPath); !os.IsNotExist(err) {
			t.Errorf("isolated %v: the old response is still there: %v", isolated, err)
		}
		warned := slices.ContainsFunc(readLog(t, logPath), func(e map[string]any) bool {
			return e["message"] == "removed a response nobody collected"
		})
		if warned == isolated {
			t.Errorf("isolated %v: warned %v", isolated, warned)
		}
	}
}

// agentConfig denies force pushes globally; agent "release" allows them,
// vouched for the uid askerUID only.
const agentConfig = `{
  "permission": {"*": "ask", "bash": {"*": "ask", "git *": "allow", "git push --force*": "deny"}},
  "agents": {"release": {"permission": {"bash": {"git push --force*": "allow"}}, "users": [61002]}}
}`

// A child can claim any agent name (issue 18), and so any agent's allow
// overrides. In the isolation mode the broker passes the rules the uid
// the kernel gave the request file: the overrides of "release" widen an
// answer only for the uid the config lists, and the review log says how
// far the name was believed. In the same-uid mode nothing can be
// vouched: the claim applies as today, and the log says it was claimed.
func TestAgentOverridesOnlyForVouchedUIDs(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name     string
		isolated bool
		uid      int
		approved bool
		trust    string
	}{
		{"isolation, a uid the config lists", true, askerUID, true, "vouched"},
		{"isolation, another uid claims the agent", true, askerUID + 1, false, "not-vouched"},
		{"same uid, a claim", false, 0, true, "claimed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout := mailbox.Layout{Root: t.TempDir()}
			if tt.isolated {
				layout = isolatedLayout(t)
			}
			f, logPath := loggedFixture(t, layout, agentConfig, Headless{}, nil)
			id, _ := forward.NewRequestID()
			req, err := forward.Ask{Session: "child", Agent: "release", Surface: "bash", Value: "git push --force origin main", Cwd: "/w"}.Request(id, "parent", time.Now().UnixMilli())
			if err != nil {
				t.Fatal(err)
			}
			dropAs(t, f.layout, tt.uid, req)
			if resp := awaitResponse(t, f.layout, req.ID); resp.Approved != tt.approved {
				t.Errorf("approved %v, want %v (%+v)", resp.Approved, tt.approved, resp)
			}
			f.stop()
			entries := entriesOf(t, logPath, req.ID)
			if len(entries) == 0 {
				t.Fatal("no review entry")
			}
			for _, e := range entries {
				if e["agentTrust"] != tt.trust {
					t.Errorf("%s: agentTrust %v, want %q", e["event"], e["agentTrust"], tt.trust)
				}
				_, hasUID := e["requesterUid"]
				if hasUID != tt.isolated {
					t.Errorf("%s: requesterUid %v in the isolation mode %v", e["event"], e["requesterUid"], tt.isolated)
				}
			}
		})
	}
}
