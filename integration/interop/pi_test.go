package interop

// The published pi-permission-system 20.7.3 against courier, both ways:
// pi's child (its gate, authorizer selection and ParentAuthorizer) asking a
// courier broker, and courier's child asking pi's parent (its
// ForwardingManager, ForwardedRequestServer and dialog). Every file on the
// pi side is written and read by pi's own modules (pi_harness_test.go).

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/rules"
)

// piRequestID is the shape of a request id pi 20.7.3's child mints.
var piRequestID = regexp.MustCompile(`^[0-9]{13}-[0-9a-z]{1,8}-[0-9]+$`)

// legacyConfig is the built-in rules with legacyBashDisplayMatch on
// (docs/CONFIG.md): a config file replaces the built-in rules, so they are
// copied in.
func legacyConfig(t *testing.T) string {
	t.Helper()
	var cfg map[string]any
	if err := json.Unmarshal(rules.DefaultConfigJSON(), &cfg); err != nil {
		t.Fatalf("decoding the built-in rules: %v", err)
	}
	cfg["legacyBashDisplayMatch"] = true
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("encoding the config: %v", err)
	}
	return string(data)
}

// TestPiChild runs pi 20.7.3's child side against `broker serve --terminal
// deny`. pi's child is started first and its request file copied before
// the broker starts (the broker serves what is already pending), so the
// bytes pi wrote are checked without racing anyone.
func TestPiChild(t *testing.T) {
	p := RequirePi(t)
	const parent, child = "parent-pi", "child-pi"
	cases := []struct {
		name string
		// command is the bash command line; path, when set, is a read
		// outside the working directory instead.
		command, path string
		// legacy configures legacyBashDisplayMatch (with the built-in rules).
		legacy bool
		// golden is the request file pi wrote, normalized.
		golden string
		// The decision pi's ParentAuthorizer returned and what its gate
		// tells the agent ("" reason: allowed).
		approved bool
		state    string
		reason   string
		// review is a line the broker's review log must have.
		review string
	}{{
		// broker --help: "A pi 20.x child's request carries no access
		// facts: the rules are not consulted for it ... it goes to the
		// chain and the terminal"; at --terminal deny that is
		// "unavailable". pi 20.7.3 has no such state: its gate reads the
		// plain denial as a user's, with courier's reason.
		name: "git-status-no-facts", command: "git status --short", golden: "request.bash.git-status.json",
		state:  "denied",
		reason: "[pi-permission-system] User denied bash command 'git status --short'. Reason: No human is available at this broker to answer permission requests.",
		review: `"event":"forwarded_permission.denied",.*"decidedBy":\{"kind":"unavailable"`,
	}, {
		// legacyBashDisplayMatch: the built-in "git status *": "allow"
		// matches the display value.
		name: "git-status-legacy", command: "git status --short", legacy: true, golden: "request.bash.git-status.json",
		approved: true, state: "approved",
		review: `"event":"forwarded_permission.approved",.*"decidedBy":\{"kind":"rule","origin":"display_value/global","pattern":"git status \*","surface":"bash"\}`,
	}, {
		// The built-in deny rule's reason reaches the agent through pi's
		// gate (pi 20.7.3's own policy denials carry none).
		name: "rm-rf-home-legacy", command: "rm -rf ~", legacy: true, golden: "request.bash.rm-rf-home.json",
		state:  "denied_with_reason",
		reason: "[pi-permission-system] User denied bash command 'rm -rf ~'. Reason: Recursive force-delete under the home directory can destroy the user's data; delete inside the worktree instead.",
		review: `"event":"forwarded_permission.denied",.*"decidedBy":\{"kind":"rule","origin":"display_value/global","pattern":"rm -rf ~\*","surface":"bash"\}`,
	}, {
		// pi's external-directory gate: the request's surface is the tool
		// (read), its grant suggestion external_directory. No access
		// facts, so the terminal: unavailable. The suggestion is dropped
		// by courier's admission (a grant must name the ask's surface),
		// where a 20.7.3 parent would offer it.
		name: "read-external-no-facts", path: "/etc/hosts", golden: "request.read-external.json",
		state:  "denied",
		reason: "[pi-permission-system] User denied external directory access for tool 'read' path '/etc/hosts'. Reason: No human is available at this broker to answer permission requests.",
		review: `"error":"external_directory \\"/etc/\*\\" \(it names the surface \\"external_directory\\"; the ask is on \\"read\\"\)","message":"1 session grant was dropped, not offered for the whole session"`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCase(t, p.Tools)
			// A process-based subagent as pi 20.7.3 detects one: a hint
			// variable, and the parent it forwards to.
			ask, value, surface := []string{"--bash", tc.command}, tc.command, "bash"
			if tc.path != "" {
				ask, value, surface = []string{"--read", tc.path}, tc.path, "read"
			}
			pi := c.Start("pi-child", p.Driver(c, "child", child,
				[]string{"PI_IS_SUBAGENT=1", "PI_SUBAGENT_PARENT_SESSION=" + parent},
				append([]string{"--agent", "Explore"}, ask...)...))
			reqPath, reqBytes := c.WaitRequest(parent, PiTimeout)
			p.Golden(t, tc.golden, reqBytes, c.Dir)
			var req struct {
				ID string `json:"id"`
			}
			decodeLine(t, reqBytes, &req)
			// pi 20.7.3 mints <Date.now()>-<8 base36>-<pid> (reference
			// pi-20.7.3.md, difference 3); the golden hides the value.
			if !piRequestID.MatchString(req.ID) {
				t.Errorf("pi's request id %q is not <ms>-<base36>-<pid>", req.ID)
			}
			if filepath.Base(reqPath) != req.ID+".json" {
				t.Errorf("pi named its request %s, its id is %q", filepath.Base(reqPath), req.ID)
			}

			opts := BrokerOptions{Session: parent}
			if tc.legacy {
				opts.Config = legacyConfig(t)
			}
			b := c.StartBroker(opts)
			exit, out := pi.Wait(PiTimeout)
			if exit != 0 {
				t.Fatalf("the pi driver exited %d: %s", exit, out)
			}
			var res piChildResult
			decodeLine(t, out, &res)
			t.Logf("pi's child: %s", res)
			if res.Decision == nil {
				t.Fatalf("pi's authorizer returned no decision: %s", out)
			}
			d := res.Decision
			if d.Approved != tc.approved || d.State != tc.state || d.ResponderSessionID != parent {
				t.Errorf("pi's decision = approved %v, state %q, responder %q; want %v, %q, %q",
					d.Approved, d.State, d.ResponderSessionID, tc.approved, tc.state, parent)
			}
			wantAction := "allow"
			if !tc.approved {
				wantAction = "block"
			}
			if res.Outcome.Action != wantAction || res.Outcome.Reason != tc.reason {
				t.Errorf("pi's gate: %q %q\nwant:       %q %q", res.Outcome.Action, res.Outcome.Reason, wantAction, tc.reason)
			}

			// The broker decoded pi's bytes: its review log names the
			// request by pi's id and hashes exactly the bytes pi wrote.
			sum := sha256.Sum256(reqBytes)
			b.WaitReview(`"requestId":"`+regexp.QuoteMeta(req.ID)+`".*"requestSha256":"`+hex.EncodeToString(sum[:])+`".*"value":"`+regexp.QuoteMeta(value)+`"`, ServeTimeout)
			b.WaitReview(tc.review, ServeTimeout)
			if !tc.legacy {
				b.WaitReview(`the rules were not consulted for a \\"`+surface+`\\" request of agent \\"Explore\\" \(session \\"`+child+`\\"\): no access facts: pi 20\.x child`, ServeTimeout)
			}
		})
	}
}

// TestPiChildNeedsHint: a pi 20.7.3 session without UI that no hint
// variable marks as a subagent does not forward, even with the parent
// variable set (README "Using courier with pi"; reference pi-20.7.3.md,
// difference 15): pi's gate denies it as having no UI, and writes nothing.
func TestPiChildNeedsHint(t *testing.T) {
	p := RequirePi(t)
	const parent = "parent-pi"
	c := NewCase(t, p.Tools)
	b := c.StartBroker(BrokerOptions{Session: parent})
	exit, out := c.Start("pi-child", p.Driver(c, "child", "child-pi",
		[]string{"PI_SUBAGENT_PARENT_SESSION=" + parent},
		"--agent", "Explore", "--bash", "git status --short")).Wait(PiTimeout)
	if exit != 0 {
		t.Fatalf("the pi driver exited %d: %s", exit, out)
	}
	var res piChildResult
	decodeLine(t, out, &res)
	t.Logf("pi's child: %s", res)
	const want = "[pi-permission-system] Running bash command 'git status --short' requires approval, but no interactive UI is available."
	if res.Outcome.Action != "block" || res.Outcome.Reason != want {
		t.Errorf("pi's gate: %q %q, want block %q", res.Outcome.Action, res.Outcome.Reason, want)
	}
	if res.Decision == nil || !res.Decision.ConfirmationUnavailable {
		t.Errorf("pi's decision is not its DenyingAuthorizer's (confirmationUnavailable): %s", out)
	}
	// The broker made the inbox; pi wrote nothing into it.
	if names, _ := filepath.Glob(filepath.Join(c.Root, "sessions", parent, "requests", "*")); len(names) > 0 {
		t.Errorf("pi wrote into the parent's inbox without a hint variable: %v", names)
	}
	for _, l := range b.Reviews() {
		if strings.Contains(l, `"requestId"`) {
			t.Errorf("the broker saw a request: %s", l)
		}
	}
}

// piDialog is a dialog pi's parent showed (one line of the driver's
// parent mode).
type piDialog struct {
	Dialog  string   `json:"dialog"`
	Options []string `json:"options"`
}

// TestPiParent runs courier's `child ask --no-heartbeat` (a pi 20.x parent
// writes no heartbeat) against pi 20.7.3's serving side, whose dialog the
// driver answers.
func TestPiParent(t *testing.T) {
	p := RequirePi(t)
	const parent, child = "parent-pi", "child-courier"
	const prompt = "Permission Required (Subagent)\nSubagent 'Explore' requested permission.\nSession ID: " + child +
		"\n\nAgent 'Explore' requested bash command 'npm install'. Allow this command?"
	cases := []struct {
		name   string
		answer string
		// What courier's child prints and its exit status.
		exit         int
		approved     bool
		state        string
		denialReason string
		// dialogs is how many selects pi showed.
		dialogs int
	}{
		{name: "approve", answer: "approve", exit: 0, approved: true, state: "approved", dialogs: 1},
		{name: "deny", answer: "deny", exit: 1, state: "denied", dialogs: 1},
		{name: "deny-reason", answer: "reason:Use pnpm instead", exit: 1, state: "denied_with_reason", denialReason: "Use pnpm instead", dialogs: 1},
		// "Yes, for this session" at pi's dialog. pi 20.7.3 offers the
		// scope choice (this subagent / the whole session) only for a
		// request whose sessionApproval is its {surface, patterns};
		// courier's child writes the 25.x {grants: [...]}, which 20.7.3's
		// reader drops: one select, and the grant is the child's own.
		{name: "session", answer: "session", exit: 0, approved: true, state: "approved_for_session", dialogs: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCase(t, p.Tools)
			pi := c.Start("pi-parent", p.Driver(c, "parent", parent, nil, "--answer", tc.answer, "--count", "1"))
			ask := exec.Command(c.Tools.Child, "ask", "--no-heartbeat", "--timeout", "60s", "--root", c.Root,
				"--parent", parent, "--session", child, "--agent", "Explore", "--surface", "bash", "--value", "npm install")
			ask.Dir, ask.Env = c.Dir, c.Env()
			exit, out := c.Start("child-ask", ask).Wait(PiTimeout)
			if exit != tc.exit {
				t.Errorf("child ask exited %d, want %d: %s", exit, tc.exit, out)
			}
			var got struct {
				Approved     bool    `json:"approved"`
				State        string  `json:"state"`
				DenialReason *string `json:"denialReason"`
				Unavailable  bool    `json:"unavailable"`
				DecidedBy    struct {
					Kind               string          `json:"kind"`
					ResponderSessionID string          `json:"responderSessionId"`
					Decision           json.RawMessage `json:"decision"`
				} `json:"decidedBy"`
			}
			decodeLine(t, out, &got)
			t.Logf("courier's child printed: %s", strings.TrimSpace(string(out)))
			reason := ""
			if got.DenialReason != nil {
				reason = *got.DenialReason
			}
			if got.Approved != tc.approved || got.State != tc.state || reason != tc.denialReason || got.Unavailable {
				t.Errorf("child ask printed approved %v, state %q, reason %q, unavailable %v; want %v, %q, %q, false",
					got.Approved, got.State, reason, got.Unavailable, tc.approved, tc.state, tc.denialReason)
			}
			// A 20.7.3 response has no decidedBy: README's "shown as
			// forwarded with decision: null".
			if got.DecidedBy.Kind != "forwarded" || got.DecidedBy.ResponderSessionID != parent || string(got.DecidedBy.Decision) != "null" {
				t.Errorf("decidedBy = %+v, want forwarded by %q with decision null", got.DecidedBy, parent)
			}

			pexit, pout := pi.Wait(PiTimeout)
			if pexit != 0 {
				t.Fatalf("the pi driver exited %d: %s", pexit, pout)
			}
			lines := strings.Split(strings.TrimSpace(string(pout)), "\n")
			if len(lines) != tc.dialogs {
				t.Errorf("pi showed %d dialogs, want %d:\n%s", len(lines), tc.dialogs, pout)
			}
			var first piDialog
			decodeLine(t, []byte(lines[0]), &first)
			if first.Dialog != prompt {
				t.Errorf("pi's dialog:\n%s\nwant:\n%s", first.Dialog, prompt)
			}
		})
	}
}

// TestPiParentBytes checks the files between courier's child and pi's
// parent byte for byte: the request courier's child writes (which pi
// 20.7.3 requires a message in) is served by pi, and the response pi
// writes is kept as a golden. courier's child is stopped once its request
// is written, so that nobody consumes pi's response before it is read.
func TestPiParentBytes(t *testing.T) {
	p := RequirePi(t)
	const parent, child = "parent-pi", "child-courier"
	c := NewCase(t, p.Tools)
	ask := exec.Command(c.Tools.Child, "ask", "--no-heartbeat", "--timeout", "60s", "--root", c.Root,
		"--parent", parent, "--session", child, "--agent", "Explore", "--surface", "bash", "--value", "npm install")
	ask.Dir, ask.Env = c.Dir, c.Env()
	asking := c.Start("child-ask", ask)
	reqPath, reqBytes := c.WaitRequest(parent, PiTimeout)
	if err := asking.cmd.Process.Kill(); err != nil {
		t.Fatalf("stopping child ask: %v", err)
	}
	asking.Wait(PiTimeout)
	t.Logf("courier's request: %s", reqBytes)
	var req struct {
		ID      string  `json:"id"`
		Message *string `json:"message"`
	}
	decodeLine(t, reqBytes, &req)
	if req.Message == nil {
		t.Fatalf("courier's request has no message, which pi 20.7.3 requires: %s", reqBytes)
	}

	pi := c.Start("pi-parent", p.Driver(c, "parent", parent, nil, "--answer", "reason:Use pnpm instead", "--count", "1"))
	if exit, out := pi.Wait(PiTimeout); exit != 0 {
		t.Fatalf("the pi driver exited %d: %s", exit, out)
	}
	if _, err := os.Stat(reqPath); !os.IsNotExist(err) {
		t.Errorf("pi did not delete the request it answered (%s): %v", reqPath, err)
	}
	respPath := filepath.Join(c.Root, "sessions", parent, "responses", req.ID+".json")
	resp, err := os.ReadFile(respPath)
	if err != nil {
		t.Fatalf("pi wrote no response: %v", err)
	}
	t.Logf("pi's response: %s", resp)
	p.Golden(t, "response.denied_with_reason.json", resp, c.Dir)
}
