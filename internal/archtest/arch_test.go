package archtest

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/seed6639df8c/courier/"

// layers places every package of the module (cmd/ and integration/ aside)
// in a layer: a package may import packages of lower layers only. A new
// package must be given its place here, and in docs/ARCHITECTURE.md.
var layers = map[string]int{
	// Leaves: no I/O of the mailbox, no policy.
	"internal/strictjson":               0,
	"internal/filewatch":                0,
	"internal/flagargs":                 0,
	"internal/fileperm":                 0,
	"internal/agingbloom":               0,
	"bashunits":                         0,
	"notify":                            0,
	"plugins/gen/courier/authorizer/v1": 0,
	"natsembed":                         1,
	"internal/sibling":                  1,
	"internal/sibling/siblingtest":      0,
	"provenance":                        1,
	"intent":                            1,
	"wire":                              2,
	// What is decided, and the contract a plugin codes against.
	"authorizer": 3,
	"decision":   3,
	"rules":      3,
	// The transport, and the review log.
	"mailbox":   3,
	"reviewlog": 3,
	"natsbox":   3,
	// Built on the above.
	"grants":                  4,
	"reviewlog/reviewlogtest": 4,
	"audit":                   4,
	"chain":                   4,
	"plugins/protocol":        4,
	"plugins/confine":         4,
	"plugins":                 5,
	"plugins/sdk":             5,
	"plugins/denylist":        5,
	"plugins/readonly":        5,
	"plugins/judge":           5,
	"forward":                 5,
	"serve":                   5,
	"natsbridge":              5,
	"relay":                   6,
	"natsforward":             6,
	"agenthook":               6,
	"prompt":                  6,
	"internal/bench":          7,
	"internal/archtest":       7,
}

// never lists imports that layering alone would allow but the design
// forbids: judging a request never needs the transport.
var never = map[string][]string{
	"rules":      {"mailbox"},
	"decision":   {"mailbox"},
	"authorizer": {"mailbox"},
	"chain":      {"mailbox", "forward", "serve"},
	"plugins":    {"mailbox", "serve", "forward"},
}

// leafDeps are third-party modules a package must not link, directly or
// not: a plugin author's binary carries none of the broker's transport or
// logging.
var leafDeps = map[string][]string{
	"wire":        {"github.com/fsnotify/fsnotify", "github.com/google/renameio", "github.com/rs/zerolog"},
	"authorizer":  {"github.com/fsnotify/fsnotify", "github.com/google/renameio", "github.com/rs/zerolog", "github.com/hashicorp/go-plugin", "google.golang.org/grpc"},
	"plugins/sdk": {"github.com/fsnotify/fsnotify", "github.com/google/renameio", "github.com/rs/zerolog"},
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list packages with: %v", err)
	}
	cmd := exec.Command(gobin, append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

func TestLayers(t *testing.T) {
	lines := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	seen := map[string]bool{}
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok || strings.HasPrefix(pkg, "cmd/") || strings.HasPrefix(pkg, "integration") {
			continue
		}
		seen[pkg] = true
		layer, placed := layers[pkg]
		if !placed {
			t.Errorf("package %s has no layer: give it one here and in docs/ARCHITECTURE.md", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if strings.HasPrefix(dep, "cmd/") {
				t.Errorf("%s imports a command, %s", pkg, dep)
				continue
			}
			if dl, ok := layers[dep]; ok && dl >= layer {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only lower layers", pkg, layer, dep, dl)
			}
			if slices.Contains(never[pkg], dep) {
				t.Errorf("%s imports %s, which it must never need", pkg, dep)
			}
		}
	}
	for pkg := range layers {
		if !seen[pkg] {
			t.Errorf("layers names %s, which no longer exists", pkg)
		}
	}
}

func TestLeafDependencies(t *testing.T) {
	for pkg, banned := range leafDeps {
		deps := goList(t, "-deps", "./"+pkg)
		for _, d := range deps {
			for _, b := range banned {
				if d == b || strings.HasPrefix(d, b+"/") {
					t.Errorf("%s links %s", pkg, d)
				}
			}
		}
	}
}

// TestFileLength keeps every file one idea a reader can hold.
func TestFileLength(t *testing.T) {
	lines := goList(t, "-f", "{{.Dir}}|{{join .GoFiles \"|\"}}|{{join .TestGoFiles \"|\"}}|{{join .XTestGoFiles \"|\"}}", "./...")
	for _, line := range lines {
		parts := strings.Split(line, "|")
		dir := parts[0]
		if strings.Contains(dir, filepath.FromSlash("plugins/gen/")) {
			continue // generated
		}
		for _, name := range parts[1:] {
			if name == "" {
				continue
			}
			n, err := countLines(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if n > 600 {
				t.Errorf("%s: %d lines, over 600: split it by responsibility", filepath.Join(dir, name), n)
			}
		}
	}
}
