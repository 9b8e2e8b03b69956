package authorizer

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/wire"
)

// Every field of the wire request, and of the types under it, is either
// projected into Evidence or deliberately withheld. A field added to
// package wire fails TestProjectionClassifiesEveryField until it is added
// here: someone must decide whether links may see it.
var (
	projected = map[string]bool{
		"Request.ID":                 true,
		"Request.RequesterSessionID": true, // forwarding provenance
		"Request.RequesterAgentName": true, // forwarding provenance
		"Request.Message":            true,
		"Request.Payload":            true,
		"Request.Source":             true,
		"Request.Surface":            true,
		"Request.Value":              true,
		"Request.SessionApproval":    true,
		"Request.AccessIntent":       true,
		"SessionApproval.Grants":     true,
		"SuggestedGrant.Surface":     true,
		"SuggestedGrant.Pattern":     true,
		"AccessIntent.Surface":       true,
		"AccessIntent.MatchValues":   true,
		"AccessIntent.BoundaryValue": true,
		"AccessIntent.Floor":         true,
		"AccessIntent.AskingUnits":   true,
		"AskingUnit.Command":         true,
		"AskingUnit.Floor":           true,
	}
	// disclosed are projected only to a link granted the disclosure.
	disclosed = map[string]bool{
		"AccessIntent.RequesterCwd": true,
		"AccessIntent.Principal":    true,
		"Principal.SessionID":       true,
		"Principal.AgentName":       true,
	}
	withheld = map[string]string{
		"Request.CreatedAt":       "transport timing, no bearing on a verdict",
		"Request.TargetSessionID": "the serving session itself",
		"Request.RequesterPID":    "a local process id: the broker's business, not a link's",
		"SessionApproval.Legacy":  "the wire shape of the grants, not their meaning",
	}
)

// wireFields lists Type.Field for every field of t and the struct types
// reachable from it, by their wire type names.
func wireFields(t reflect.Type, seen map[reflect.Type]bool, out *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() != reflect.TypeFor[wire.Request]().PkgPath() {
		return
	}
	seen[t] = true
	for f := range t.Fields() {
		*out = append(*out, t.Name()+"."+f.Name)
		wireFields(f.Type, seen, out)
	}
}

func TestProjectionClassifiesEveryField(t *testing.T) {
	var fields []string
	wireFields(reflect.TypeFor[wire.Request](), map[reflect.Type]bool{}, &fields)
	if len(fields) < 20 {
		t.Fatalf("found only %v", fields)
	}
	for _, f := range fields {
		n := 0
		for _, set := range []bool{projected[f], disclosed[f], withheld[f] != ""} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s is classified %d times: add it to exactly one of projected, disclosed or withheld in this file, and to Project if links may see it", f, n)
		}
	}
}

// markedRequest fills every string of a request with a marker naming its
// field, so a test can see where each value went.
func markedRequest() wire.Request {
	b := "boundary:BoundaryValue"
	return wire.Request{
		ID: "marker-ID", CreatedAt: 424242, RequesterSessionID: "marker-RequesterSessionID",
		TargetSessionID: "marker-TargetSessionID", RequesterAgentName: "marker-RequesterAgentName",
		Message: "marker-Message", Payload: json.RawMessage(`{"k":"marker-Payload"}`),
		Source: "marker-Source", Surface: "marker-Surface", Value: "marker-Value",
		SessionApproval: &wire.SessionApproval{Grants: []wire.SuggestedGrant{{Surface: "marker-Grant.Surface", Pattern: "marker-Grant.Pattern"}}},
		AccessIntent: &wire.AccessIntent{
			Surface: "marker-AccessIntent.Surface", MatchValues: []string{"marker-MatchValues"},
			BoundaryValue: &b, RequesterCwd: "marker-RequesterCwd",
			Principal:   wire.Principal{SessionID: "marker-Principal.SessionID", AgentName: "marker-Principal.AgentName"},
			Floor:       "marker-AccessIntent.Floor",
			AskingUnits: []wire.AskingUnit{{Command: "marker-AskingUnit.Command", Floor: "marker-AskingUnit.Floor"}},
		},
		RequesterPID: 777777,
	}
}

func TestProjectWithholdsAndDiscloses(t *testing.T) {
	req := markedRequest()
	for _, tc := range []struct {
		d            Disclosure
		cwd, princip bool
	}{
		{Disclosure{}, false, false},
		{Disclosure{Cwd: true}, true, false},
		{Disclosure{Principal: true}, false, true},
		{Disclosure{Cwd: true, Principal: true}, true, true},
	} {
		t.Run(fmt.Sprintf("%+v", tc.d), func(t *testing.T) {
			ev := Project(req, tc.d)
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			for _, never := range []string{"marker-TargetSessionID", "424242", "777777"} {
				if strings.Contains(got, never) {
					t.Errorf("evidence carries %s: %s", never, got)
				}
			}
			for _, always := range []string{"marker-ID", "marker-RequesterSessionID", "marker-RequesterAgentName",
				"marker-Message", "marker-Payload", "marker-Source", "marker-Surface", "marker-Value",
				"marker-Grant.Surface", "marker-Grant.Pattern", "marker-AccessIntent.Surface", "marker-MatchValues",
				"boundary:BoundaryValue", "marker-AccessIntent.Floor", "marker-AskingUnit.Command", "marker-AskingUnit.Floor"} {
				if !strings.Contains(got, always) {
					t.Errorf("evidence lacks %s: %s", always, got)
				}
			}
			if has := strings.Contains(got, "marker-RequesterCwd"); has != tc.cwd {
				t.Errorf("requesterCwd present = %v, want %v", has, tc.cwd)
			}
			if has := strings.Contains(got, "marker-Principal"); has != tc.princip {
				t.Errorf("principal present = %v, want %v", has, tc.princip)
			}
		})
	}
}

func TestProjectCopies(t *testing.T) {
	req := markedRequest()
	ev := Project(req, Disclosure{Cwd: true})
	ev.Access.MatchValues[0] = "changed"
	ev.Access.AskingUnits[0].Command = "changed"
	*ev.Access.BoundaryValue = "changed"
	ev.Payload[0] = '['
	ev.SessionApproval[0].Pattern = "changed"
	if req.AccessIntent.MatchValues[0] != "marker-MatchValues" || req.AccessIntent.AskingUnits[0].Command != "marker-AskingUnit.Command" ||
		*req.AccessIntent.BoundaryValue != "boundary:BoundaryValue" || req.Payload[0] != '{' ||
		req.SessionApproval.Grants[0].Pattern != "marker-Grant.Pattern" {
		t.Errorf("a link could alter the request through its evidence")
	}
}

func TestProjectAbsentParts(t *testing.T) {
	ev := Project(wire.Request{ID: "r", RequesterAgentName: "a", RequesterSessionID: "s"}, Disclosure{Cwd: true, Principal: true})
	if ev.Access != nil || ev.SessionApproval != nil || ev.Payload != nil || ev.RequesterCwd != nil || ev.Principal != nil {
		t.Errorf("absent parts projected as present: %+v", ev)
	}
	// a disclosed but empty cwd is absent, not ""
	req := markedRequest()
	req.AccessIntent.RequesterCwd = ""
	if ev := Project(req, Disclosure{Cwd: true}); ev.RequesterCwd != nil {
		t.Errorf("empty cwd disclosed as %q", *ev.RequesterCwd)
	}
}

// evidenceSources says where each field of Evidence comes from. A field
// added to Evidence fails TestEvidenceFieldsHaveSources until it is
// listed here, and so until someone has said what a link learns from it.
var evidenceSources = map[string]string{
	"RequestID":       "Request.ID",
	"Source":          "Request.Source",
	"Surface":         "Request.Surface",
	"Value":           "Request.Value",
	"Message":         "Request.Message",
	"Forwarding":      "Request.RequesterAgentName, Request.RequesterSessionID",
	"Access":          "Request.AccessIntent without RequesterCwd and Principal",
	"SessionApproval": "Request.SessionApproval.Grants",
	"Payload":         "Request.Payload",
	"RequesterCwd":    "AccessIntent.RequesterCwd, disclosed",
	"Principal":       "AccessIntent.Principal, disclosed",
	"Bash":            "Request.Value or the payload's full command evidence, and AccessIntent.AskingUnits (projectBash)",
	"Conversation":    "the broker's --intent transcript, disclosed; provenance from Request.RequesterAgentName",
}

func TestEvidenceFieldsHaveSources(t *testing.T) {
	seen := map[string]bool{}
	for f := range reflect.TypeFor[Evidence]().Fields() {
		seen[f.Name] = true
		if evidenceSources[f.Name] == "" {
			t.Errorf("Evidence.%s has no source in evidenceSources: say what it is projected from", f.Name)
		}
	}
	for name := range evidenceSources {
		if !seen[name] {
			t.Errorf("evidenceSources lists %s, which Evidence does not have", name)
		}
	}
}
