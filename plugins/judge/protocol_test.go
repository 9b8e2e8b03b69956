package judge

import (
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/plugins/protocol"
)

// TestOverTheProtocol serves the judge as a plugin (in process, over
// go-plugin's gRPC) and asks it through the broker's client: the complete
// input, the working directory and the conversation reach it, the prompt
// the model gets is the one rendered here, and the code, reason and
// metadata of its defer come back.
func TestOverTheProtocol(t *testing.T) {
	e := newEndpoint(t, ProviderOpenAI, script{text: `{"verdict":"allow","reason":"asked for","code":""}`})
	c := e.config()
	c.AllowEnabled = false
	j := newTestJudge(t, c)
	client, _ := plugin.TestPluginGRPCConn(t, false, protocol.PluginSet(j))
	defer client.Close()
	raw, err := client.Dispense(protocol.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	ev := ask("npm test && git push --force origin main", []string{"git push --force origin main"}, project,
		&authorizer.Conversation{Forwarded: true, RequesterAgent: "release-worker", Items: []authorizer.ConversationItem{
			user("Run the tests; if they pass, publish main."),
			summary("Earlier the user set up the release branch."),
		}})
	v, err := raw.(*protocol.Client).Authorize(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != authorizer.Defer || v.Code != CodeAllowsDisabled || v.Reason == "" {
		t.Errorf("verdict %+v, want a defer %q with its reason", v, CodeAllowsDisabled)
	}
	if v.Meta.Model != "llama-scripted" || v.Meta.PromptVersion != PromptVersion || v.Meta.InputTokens != 1234 || v.Meta.OutputTokens != 56 {
		t.Errorf("meta %+v", v.Meta)
	}
	calls := e.got()
	if len(calls) != 1 {
		t.Fatalf("%d model calls", len(calls))
	}
	_, got := calls[0].prompts(t, ProviderOpenAI)
	want, err := render(newPacket(ev))
	if err != nil {
		t.Fatal(err)
	}
	if got != want.User {
		t.Errorf("the model got, across the protocol:\n%s\nwant:\n%s", got, want.User)
	}
}
