package integration

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// fakeParentMain is a scripted pi parent: it drains one session's inbox and
// answers every request the way a pi node writes responses (compact JSON to
// <dest>.<pid>.<ms>.tmp, then rename; request deleted after the response),
// and keeps a heartbeat in the state the script asks for.
//
//	fakeparent --session ID [--heartbeat alive|stale|dead|none] [--respond MODE] [--count N]
//
// MODE is approve, session (approved_for_session), deny, deny-reason=TEXT,
// legacy (pi 20.7.3: no decidedBy), garbage (not JSON), or none (never
// answers). It exits after answering N requests, or after a minute.
func fakeParentMain() {
	// A script stops a parent that never answers with kill -INT, as soon
	// as it sees the heartbeat: the handler comes before the heartbeat is
	// written, or a kill between the two ended the process by the signal
	// and failed the script's wait (hardening_flood, once in CI).
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() { <-stop; os.Exit(0) }()
	fs := flag.NewFlagSet("fakeparent", flag.ExitOnError)
	session := fs.String("session", "", "serving session id")
	heartbeat := fs.String("heartbeat", "alive", "alive, stale, dead or none")
	respond := fs.String("respond", "approve", "how to answer")
	count := fs.Int("count", 0, "exit after this many answers; 0 = never")
	fs.Parse(os.Args[1:])
	root, err := mailbox.ResolveRoot("")
	if err != nil || *session == "" {
		fmt.Fprintln(os.Stderr, "fakeparent: need $PI_CODING_AGENT_DIR and --session:", err)
		os.Exit(2)
	}
	layout := mailbox.Layout{Root: root}
	if err := writeHeartbeat(layout, *session, *heartbeat); err != nil {
		fmt.Fprintln(os.Stderr, "fakeparent:", err)
		os.Exit(1)
	}
	requests, _ := layout.RequestsDir(*session)
	answered := map[string]bool{}
	lastBeat := time.Now()
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(5 * time.Millisecond) {
		if *heartbeat == "alive" && time.Since(lastBeat) > 500*time.Millisecond {
			writeHeartbeat(layout, *session, "alive")
			lastBeat = time.Now()
		}
		entries, _ := os.ReadDir(requests)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") || answered[e.Name()] {
				continue
			}
			answered[e.Name()] = true
			if *respond == "none" {
				continue
			}
			if err := answer(layout, *session, filepath.Join(requests, e.Name()), *respond); err != nil {
				fmt.Fprintln(os.Stderr, "fakeparent:", err)
				os.Exit(1)
			}
			if *count > 0 && len(answered) >= *count {
				os.Exit(0)
			}
		}
	}
	os.Exit(0)
}

func writeHeartbeat(layout mailbox.Layout, session, state string) error {
	hb := wire.Heartbeat{SessionID: session, PID: os.Getpid(), UpdatedAt: time.Now().UnixMilli()}
	switch state {
	case "none":
		return nil
	case "stale":
		hb.UpdatedAt -= 10_000
	case "dead":
		// The pid of a process that has exited and been reaped.
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			return err
		}
		hb.PID = cmd.Process.Pid
	}
	data, err := wire.EncodeHeartbeat(hb)
	if err != nil {
		return err
	}
	path, err := layout.HeartbeatPath(session)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeLikePi(path, data)
}

// writeLikePi is pi's writeJsonFileAtomic: a temp sibling named
// <dest>.<pid>.<ms>.tmp, then rename.
func writeLikePi(dest string, data []byte) error {
	tmp := fmt.Sprintf("%s.%d.%d.tmp", dest, os.Getpid(), time.Now().UnixMilli())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, dest)
}

func answer(layout mailbox.Layout, session, reqPath, mode string) error {
	data, err := os.ReadFile(reqPath)
	if err != nil {
		return err
	}
	req, _, err := wire.DecodeRequest(data)
	if err != nil {
		return fmt.Errorf("%s: %w", reqPath, err)
	}
	now := time.Now().UnixMilli()
	var body any
	user := map[string]any{"kind": "user", "via": "dialog"}
	switch {
	case mode == "approve":
		body = map[string]any{"approved": true, "state": "approved", "responderSessionId": session, "respondedAt": now, "decidedBy": user}
	case mode == "session":
		body = map[string]any{"approved": true, "state": "approved_for_session", "responderSessionId": session, "respondedAt": now, "decidedBy": user, "sessionGrantWidth": "proven"}
	case mode == "deny":
		body = map[string]any{"approved": false, "state": "denied", "responderSessionId": session, "respondedAt": now, "decidedBy": user}
	case strings.HasPrefix(mode, "deny-reason="):
		reason := strings.TrimPrefix(mode, "deny-reason=")
		body = map[string]any{"approved": false, "state": "denied_with_reason", "denialReason": reason, "responderSessionId": session, "respondedAt": now,
			"decidedBy": map[string]any{"kind": "rule", "surface": "bash", "pattern": "npm *", "origin": "global"}}
	case mode == "legacy":
		body = map[string]any{"approved": true, "state": "approved", "responderSessionId": session, "respondedAt": now}
	case mode == "garbage":
		body = json.RawMessage(`{"approved":tru`)
	default:
		return fmt.Errorf("unknown --respond %q", mode)
	}
	out, err := json.Marshal(body)
	if mode == "garbage" {
		out, err = []byte(`{"approved":tru`), nil
	}
	if err != nil {
		return err
	}
	responses, err := layout.ResponsesDir(session)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(responses, 0o755); err != nil {
		return err
	}
	if err := writeLikePi(filepath.Join(responses, req.ID+".json"), out); err != nil {
		return err
	}
	// The child may already have removed it after reading the answer.
	if err := os.Remove(reqPath); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
