package rules

import (
	"bufio"
	"errors"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// configDoc is the config reference, kept beside the parser by this test.
const configDoc = "../docs/CONFIG.md"

// docKeyTables reads the key tables of docs/CONFIG.md: for each heading,
// the first-column keys of its table whose header is "| key |".
func docKeyTables(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([^`]+)` \\|")
	tables := make(map[string][]string)
	heading, inKeys := "", false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			heading, inKeys = strings.TrimSpace(strings.TrimLeft(line, "#")), false
		case strings.HasPrefix(line, "| key |"):
			inKeys = true
		case !strings.HasPrefix(line, "|"):
			inKeys = false
		case inKeys:
			if m := row.FindStringSubmatch(line); m != nil {
				tables[heading] = append(tables[heading], m[1])
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tables
}

// diagnostics parses doc and returns every problem and warning as text.
func diagnostics(doc string) []string {
	cfg, err := Parse("c.json", []byte(doc))
	var out []Diagnostic
	var ce *ConfigError
	switch {
	case errors.As(err, &ce):
		out = append(ce.Problems, ce.Warnings...)
	case err == nil:
		out = cfg.Warnings
	}
	texts := make([]string, len(out))
	for i, d := range out {
		texts[i] = d.String()
	}
	return texts
}

// docKeys are the key tables of docs/CONFIG.md, and for each how a key of
// it is written into a config and what the parser must say of it: a key
// it reads draws no "unknown key" (whatever the value's type problems),
// and one of pi's settings draws its notice.
var docKeys = []struct {
	heading string
	// parser is what the parser reads there, from its own lists.
	parser func() []string
	// doc embeds a key into a document.
	doc func(key string) string
	// notice, when set, must be said of the key.
	notice string
}{
	{
		heading: "Top-level keys",
		parser: func() []string {
			names := []string{"$schema"}
			for _, k := range topLevelKeys {
				names = append(names, k.name)
			}
			return names
		},
		doc: func(key string) string { return `{"permission": {}, "` + key + `": null}` },
	},
	{
		heading: "`authorizerChain`",
		parser:  func() []string { return strings.Split(linkKeys, ", ") },
		doc: func(key string) string {
			return `{"permission": {}, "authorizerChain": [{"` + key + `": null}]}`
		},
	},
	{
		heading: "`permission`",
		parser:  func() []string { return []string{"action", "reason"} },
		doc:     func(key string) string { return `{"permission": {"bash": {"x": {"` + key + `": null}}}}` },
	},
	{
		heading: "`agents`",
		parser:  func() []string { return agentKeys },
		doc:     func(key string) string { return `{"permission": {}, "agents": {"a": {"` + key + `": null}}}` },
	},
	{
		heading: "pi's settings courier does not read",
		parser:  func() []string { return slices.Sorted(maps.Keys(piOnlyKeys)) },
		doc:     func(key string) string { return `{"permission": {}, "` + key + `": null}` },
		notice:  "pi-permission-system's setting, which courier does not read: ignored",
	},
}

// Every key the parser reads is in docs/CONFIG.md, with its table, and
// every key documented there is one the parser reads: the reference
// cannot drift from the code.
func TestConfigDocListsEveryKey(t *testing.T) {
	tables := docKeyTables(t)
	for _, k := range docKeys {
		documented := tables[k.heading]
		if len(documented) == 0 {
			t.Errorf("%s: no key table under the heading %q", configDoc, k.heading)
			continue
		}
		for _, key := range k.parser() {
			if !slices.Contains(documented, key) {
				t.Errorf("%s: the parser reads %q, but the table under %q does not list it", configDoc, key, k.heading)
			}
		}
		for _, key := range documented {
			said := strings.Join(diagnostics(k.doc(key)), "\n")
			if strings.Contains(said, "unknown key") {
				t.Errorf("%s lists %q under %q, but the parser does not read it:\n%s", configDoc, key, k.heading, said)
			}
			if k.notice != "" && !strings.Contains(said, k.notice) {
				t.Errorf("%s lists %q under %q, but the parser does not say %q of it:\n%s", configDoc, key, k.heading, k.notice, said)
			}
		}
	}
	// The keys the issue found missing from the README have their own
	// section, and sessionGrantWidth (a response field) is explained.
	data, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range topLevelKeys {
		if !strings.Contains(string(data), "### `"+k.name+"`") {
			t.Errorf("%s has no section \"### `%s`\" with its example", configDoc, k.name)
		}
	}
	if !strings.Contains(string(data), "**`sessionGrantWidth`**") {
		t.Errorf("%s does not explain sessionGrantWidth", configDoc)
	}
}

// The surfaces listed in docs/CONFIG.md are the ones the parser knows.
func TestConfigDocListsTheKnownSurfaces(t *testing.T) {
	data, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(data), "### Surface names")
	if !ok {
		t.Fatalf("%s has no \"### Surface names\" section", configDoc)
	}
	para, _, _ := strings.Cut(after, "Any other key")
	var listed []string
	for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(para, -1) {
		listed = append(listed, m[1])
	}
	if !slices.Equal(slices.Sorted(slices.Values(listed)), slices.Sorted(slices.Values(knownSurfaces))) {
		t.Errorf("%s lists the surfaces %q, the parser knows %q", configDoc, listed, knownSurfaces)
	}
}
