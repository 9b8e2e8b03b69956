package readonly

import (
	"testing"

	"github.com/seed6639df8c/courier/authorizer"
)

func TestReadOnly(t *testing.T) {
	a := New(Options{Git: true, Extra: []string{"jq"}})
	for cmd, want := range map[string]bool{
		"ls -la src":                  true,
		"cat README.md":               true,
		"git status --short":          true,
		"git log -n 5 --oneline":      true,
		"jq . file.json":              true,
		"ls; rm -rf /":                false,
		"cat a > b":                   false,
		"echo $(id)":                  false,
		"ls *.go":                     false,
		"rm -rf build":                false,
		"/bin/ls":                     false,
		"sort -o out in":              false,
		"tree -o listing":             false,
		"git push":                    false,
		"git diff --ext-diff":         false,
		"git log --output=x":          false,
		"git":                         false,
		"":                            false,
		"FOO=1 ls":                    false,
		"ls 'quoted'":                 false,
		"find . -delete":              false,
		"cat\tfile":                   false,
		"grep -r TODO .":              true,
		"sed -i s/a/b/ file":          false,
		"git -c core.pager=sh log":    false,
		"git blame --contents x file": false,
	} {
		if got := a.ReadOnly(cmd); got != want {
			t.Errorf("ReadOnly(%q) = %v, want %v", cmd, got, want)
		}
	}
	if New(Options{}).ReadOnly("git status") {
		t.Error("git allowed without Options.Git")
	}
	if New(Options{NoDefaults: true}).ReadOnly("ls") {
		t.Error("ls allowed with NoDefaults")
	}
}

func TestAuthorize(t *testing.T) {
	a := New(Options{})
	ask := func(display string, facts *authorizer.AccessFacts) authorizer.VerdictKind {
		v, err := a.Authorize(t.Context(), authorizer.Evidence{Surface: "bash", Value: display, Access: facts})
		if err != nil {
			t.Fatal(err)
		}
		return v.Kind
	}
	bash := func(values ...string) *authorizer.AccessFacts {
		return &authorizer.AccessFacts{Surface: "bash", MatchValues: values}
	}
	if k := ask("ls -la", bash("ls -la")); k != authorizer.Allow {
		t.Errorf("ls: %v", k)
	}
	if k := ask("ls && rm -rf x", bash("ls")); k != authorizer.Defer {
		t.Errorf("chained display: %v", k)
	}
	if k := ask("ls", nil); k != authorizer.Defer {
		t.Errorf("no facts: %v", k)
	}
	facts := bash("ls")
	facts.Floor = "<opaque-bash-wrapper>"
	if k := ask("ls", facts); k != authorizer.Defer {
		t.Errorf("floor: %v", k)
	}
	facts = bash("ls")
	facts.AskingUnits = []authorizer.AskingUnit{{Command: "rm x"}}
	if k := ask("ls", facts); k != authorizer.Defer {
		t.Errorf("asking unit rm: %v", k)
	}
	if v, _ := a.Authorize(t.Context(), authorizer.Evidence{Surface: "read", Value: "ls", Access: &authorizer.AccessFacts{Surface: "read", MatchValues: []string{"ls"}}}); v.Kind != authorizer.Defer {
		t.Errorf("non-bash: %v", v.Kind)
	}
}
