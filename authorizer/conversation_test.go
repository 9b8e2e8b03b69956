package authorizer

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const intentMarker = "marker-INTENT-7f3a"

func intentProvider(calls *int) func() *Conversation {
	return func() *Conversation {
		*calls++
		return &Conversation{
			// What the provider says of provenance is overridden by the
			// request: it knows nothing of the ask.
			Forwarded: false, RequesterAgent: "provider-says",
			Items: []ConversationItem{
				{Role: "user", Text: "please force-push the release branch " + intentMarker},
				{Role: "assistant", Text: "summary of earlier turns", Derived: true},
			},
		}
	}
}

// The conversation reaches a link only when disclosed to it, labelled as
// forwarded with the requester's agent, and the provider is not even
// called otherwise.
func TestProjectConversationDisclosed(t *testing.T) {
	req := markedRequest()
	for _, tc := range []struct {
		name      string
		d         Disclosure
		provider  bool
		wantCalls int
		want      bool
	}{
		{"not disclosed", Disclosure{Cwd: true, Principal: true}, true, 0, false},
		{"disclosed", Disclosure{Conversation: true}, true, 1, true},
		{"disclosed, no provider", Disclosure{Conversation: true}, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			var p func() *Conversation
			if tc.provider {
				p = intentProvider(&calls)
			}
			ev := ProjectWithConversation(req, tc.d, p)
			if calls != tc.wantCalls {
				t.Errorf("provider called %d times, want %d", calls, tc.wantCalls)
			}
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(b), intentMarker); has != tc.want {
				t.Errorf("conversation present = %v, want %v: %s", has, tc.want, b)
			}
			if !tc.want {
				if ev.Conversation != nil {
					t.Errorf("Conversation = %+v, want nil", ev.Conversation)
				}
				return
			}
			want := &Conversation{Forwarded: true, RequesterAgent: "marker-RequesterAgentName", Items: intentProvider(new(int))().Items}
			if !reflect.DeepEqual(ev.Conversation, want) {
				t.Errorf("Conversation = %+v, want %+v", ev.Conversation, want)
			}
		})
	}
	// Project itself never carries one.
	if ev := Project(req, Disclosure{Conversation: true}); ev.Conversation != nil {
		t.Errorf("Project carried a conversation: %+v", ev.Conversation)
	}
}

// No intent text is not an empty conversation: a judge must not read "the
// user said nothing" into a broker that has no transcript.
func TestProjectConversationEmpty(t *testing.T) {
	for name, p := range map[string]func() *Conversation{
		"nil":      func() *Conversation { return nil },
		"no items": func() *Conversation { return &Conversation{Items: []ConversationItem{}} },
	} {
		if ev := ProjectWithConversation(markedRequest(), Disclosure{Conversation: true}, p); ev.Conversation != nil {
			t.Errorf("%s: Conversation = %+v, want nil", name, ev.Conversation)
		}
	}
}

// Each link gets its own copy of the items.
func TestProjectConversationCopies(t *testing.T) {
	shared := &Conversation{Items: []ConversationItem{{Role: "user", Text: "x"}}}
	ev := ProjectWithConversation(markedRequest(), Disclosure{Conversation: true}, func() *Conversation { return shared })
	ev.Conversation.Items[0].Text = "changed"
	if shared.Items[0].Text != "x" {
		t.Error("a link could alter the conversation another link sees")
	}
}
