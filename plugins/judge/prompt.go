package judge

import (
	"embed"
	"strings"
	"text/template"
)

// PromptVersion names the prompt the judge renders: the system prompt and
// the evidence template under prompts/. It is logged with every verdict
// (Meta.PromptVersion), so that an audit can tell verdicts of different
// prompts apart. Any change to either file is a new version, in a new
// directory: the golden tests pin the rendered text.
const PromptVersion = "judge-v1"

//go:embed prompts/judge-v1/system.txt prompts/judge-v1/user.tmpl
var prompts embed.FS

var (
	systemPrompt = mustRead("prompts/" + PromptVersion + "/system.txt")
	userPrompt   = template.Must(template.New("user.tmpl").
			Funcs(template.FuncMap{"fence": fence, "inline": inline}).
			Option("missingkey=error").
			Parse(mustRead("prompts/" + PromptVersion + "/user.tmpl")))
)

func mustRead(name string) string {
	b, err := prompts.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// rendered is one model call's text: the fixed instructions and the
// evidence.
type rendered struct {
	System string
	User   string
}

// render renders p with the current prompt.
func render(p packet) (rendered, error) {
	var b strings.Builder
	if err := userPrompt.Execute(&b, p); err != nil {
		return rendered{}, err
	}
	return rendered{System: systemPrompt, User: b.String()}, nil
}
