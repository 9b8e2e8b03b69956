package sdk

import (
	"errors"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// A third-party plugin links package sdk and package authorizer, and with
// them nothing of the broker: not its file watcher, its atomic file writes
// or its logger, and not the runner of the chain. Package authorizer, the
// contract, does not even link the transport.
var pluginDeps = []struct {
	pkg       string
	forbidden []string
}{
	{"github.com/seed6639df8c/courier/plugins/sdk", brokerOnly},
	{"github.com/seed6639df8c/courier/authorizer", append([]string{
		"github.com/hashicorp/go-plugin",
		"google.golang.org/grpc",
	}, brokerOnly...)},
}

// brokerOnly are the packages, and the modules under them, that only the
// broker links.
var brokerOnly = []string{
	"github.com/fsnotify/fsnotify",
	"github.com/google/renameio",
	"github.com/rs/zerolog",
	"github.com/seed6639df8c/courier/chain",
	"github.com/seed6639df8c/courier/reviewlog",
}

func TestPluginLinksNothingOfTheBroker(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	for _, tc := range pluginDeps {
		t.Run(path.Base(tc.pkg), func(t *testing.T) {
			graph := importGraph(t, goCmd, tc.pkg)
			if _, ok := graph[tc.pkg]; !ok {
				t.Fatalf("go list -deps %s does not list the package itself", tc.pkg)
			}
			for _, f := range tc.forbidden {
				var linked []string
				for dep := range graph {
					if dep == f || strings.HasPrefix(dep, f+"/") {
						linked = append(linked, dep)
					}
				}
				if len(linked) > 0 {
					slices.Sort(linked)
					t.Errorf("%s links %s: %s", tc.pkg, f, strings.Join(importChain(graph, tc.pkg, linked[0]), " -> "))
				}
			}
		})
	}
}

// importGraph is pkg and every package it links, each with its imports,
// as go list -deps reports them for this platform.
func importGraph(t *testing.T, goCmd, pkg string) map[string][]string {
	t.Helper()
	out, err := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", pkg).Output()
	if err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			graph[fields[0]] = fields[1:]
		}
	}
	return graph
}

// importChain is a shortest chain of imports from one package to another,
// to say why a package is linked.
func importChain(graph map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var route []string
			for ; p != ""; p = prev[p] {
				route = append([]string{p}, route...)
			}
			return route
		}
		for _, q := range graph[p] {
			if _, seen := prev[q]; !seen {
				prev[q] = p
				queue = append(queue, q)
			}
		}
	}
	return []string{from, "?", to}
}
