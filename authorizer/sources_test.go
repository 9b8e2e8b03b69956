package authorizer_test

import (
	"reflect"
	"testing"

	"github.com/seed6639df8c/courier/agenthook"
	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/wire"
)

// The projection reads courier's own requests (asking units, no payload)
// as carrying the line in the display value. These tests hold the
// producers to that: courier's child (`child ask`, forward.Ask.Request)
// and the agent hook adapter (`child hook`, agenthook.Asks) must put the
// complete line there, or Bash would name a unit as the whole.
const line = "npm test && git push --force origin main"

var wantBash = &authorizer.BashInput{Complete: line, Triggering: []string{"npm test", "git push --force origin main"}}

func TestProjectBashCourierChild(t *testing.T) {
	ask := forward.Ask{Session: "child-1", Agent: "release-worker", Surface: "bash", Value: line, Cwd: "/w/release"}
	req, err := ask.Request("perm-1", "parent", 1)
	if err != nil {
		t.Fatal(err)
	}
	ev := authorizer.Project(roundTrip(t, req), authorizer.Disclosure{})
	if !reflect.DeepEqual(ev.Bash, wantBash) {
		t.Errorf("Bash = %#v, want %#v", ev.Bash, wantBash)
	}
}

func TestProjectBashAgentHooks(t *testing.T) {
	for name, event := range map[string]string{
		"claude-code": `{"session_id": "b648dec7-a2b0-4fd4-8836-9c8c24580d69", "cwd": "/case/work", "agent_id": "a8f2c355829900d95",
			"agent_type": "general-purpose", "hook_event_name": "PermissionRequest", "permission_mode": "default",
			"tool_name": "Bash", "tool_input": {"command": "` + line + `", "description": "Test, then force push"}}`,
		"codex": `{"session_id": "01a231e1-b766-7b40-ae56-781cc1aecedc", "agent_id": "01a231e1-b881-7623-af5c-506b0b872223",
			"agent_type": "default", "cwd": "/case/work", "hook_event_name": "PermissionRequest", "permission_mode": "default",
			"tool_name": "Bash", "tool_input": {"command": "` + line + `", "description": "needs to push"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			ev, err := agenthook.Decode([]byte(event))
			if err != nil {
				t.Fatal(err)
			}
			asks, err := agenthook.Asks(ev, ev.AgentID, ev.AgentType)
			if err != nil || len(asks) != 1 {
				t.Fatalf("asks %v, %v", asks, err)
			}
			req, err := asks[0].Request("perm-1", "parent", 1)
			if err != nil {
				t.Fatal(err)
			}
			got := authorizer.Project(roundTrip(t, req), authorizer.Disclosure{})
			if !reflect.DeepEqual(got.Bash, wantBash) {
				t.Errorf("Bash = %#v, want %#v", got.Bash, wantBash)
			}
		})
	}
}

// roundTrip is req as the broker reads it from the file the child writes.
func roundTrip(t *testing.T, req wire.Request) wire.Request {
	t.Helper()
	data, err := wire.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := wire.DecodeRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	return back
}
