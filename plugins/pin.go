package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/seed6639df8c/courier/internal/strictjson"
	"github.com/seed6639df8c/courier/rules"
)

// PinEntry is one authorizerChain link as broker plugin pin prints and
// writes it: the binary's name, absolute path and SHA-256.
type PinEntry struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// linkNameChars is what a link name may not hold (rules' name pattern).
var linkNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// DefaultLinkName is the link name broker plugin pin gives a binary when
// none is asked for: its file name, cut to what a link name may be.
func DefaultLinkName(path string) string {
	name := linkNameChars.ReplaceAllString(filepath.Base(path), "-")
	name = strings.TrimLeft(name, ".-_")
	if len(name) > 64 {
		name = name[:64]
	}
	if name == "" {
		name = "plugin"
	}
	return name
}

// PinInConfig returns config (a broker config file's bytes) with e pinned
// in its authorizerChain, editing the bytes in place so that the rest of
// the file keeps its order, spacing and line breaks:
//
//   - byName (the operator named the link): the link named e.Name gets
//     e's path and sha256;
//   - otherwise every link whose path is e.Path gets e's sha256 (two
//     links may run one binary with different args);
//   - when nothing matches, e is appended to the chain (created when
//     missing) as one line, {"name": …, "path": …, "sha256": …}.
//
// changed says what was done, for the operator. The result must load
// (rules.Parse): a config that would not is refused, unchanged.
func PinInConfig(config []byte, e PinEntry, byName bool) (out []byte, changed string, err error) {
	item, err := marshalLine(e)
	if err != nil {
		return nil, "", err
	}
	if len(bytes.TrimSpace(config)) == 0 {
		return nil, "", errors.New("the config is empty: write its permission object first (rules/default.json is a start)")
	}
	if err := strictjson.Check(config); err != nil {
		return nil, "", fmt.Errorf("the config is not valid JSON: %w", err)
	}
	root := strictjson.Root(config)
	if root.Kind() != strictjson.KindObject {
		return nil, "", fmt.Errorf("the config is %s, want an object", root.Kind().Noun())
	}
	var (
		ed                  editor
		chainKey, lastValue strictjson.Value
		chainVal            strictjson.Value
		found               bool
	)
	ms := root.Members()
	for ms.Next() {
		if string(ms.Key().Text()) == "authorizerChain" {
			chainKey, chainVal, found = ms.Key(), ms.Value(), true
		}
		lastValue = ms.Value()
	}
	if err := ms.Err(); err != nil {
		return nil, "", err
	}
	switch {
	case !found && lastValue.Kind() == strictjson.KindInvalid:
		// {} : the chain becomes the only member.
		ed.replace(root, "{\n  \"authorizerChain\": [\n    "+item+"\n  ]\n}")
		changed = fmt.Sprintf("added link %q", e.Name)
	case !found:
		ws := spaceBefore(config, lastValueKeyStart(config, lastValue))
		indent := lineIndent(config, lastValueKeyStart(config, lastValue))
		ed.insert(end(lastValue), ","+ws+"\"authorizerChain\": ["+"\n"+indent+"  "+item+"\n"+indent+"]")
		changed = fmt.Sprintf("added link %q", e.Name)
	case chainVal.Kind() != strictjson.KindArray:
		return nil, "", fmt.Errorf("the config's authorizerChain is %s, want an array", chainVal.Kind().Noun())
	default:
		changed, err = pinInChain(config, &ed, chainKey, chainVal, e, item, byName)
		if err != nil {
			return nil, "", err
		}
	}
	out = ed.apply(config)
	if _, err := rules.Parse("the pinned config", out); err != nil {
		return nil, "", fmt.Errorf("the config would not load after pinning: %w", err)
	}
	return out, changed, nil
}

// pinInChain edits the links of chain, the authorizerChain array.
func pinInChain(doc []byte, ed *editor, key, chain strictjson.Value, e PinEntry, item string, byName bool) (string, error) {
	type link struct {
		obj                   strictjson.Value
		name, path, sha       string
		pathVal, shaVal, last strictjson.Value
	}
	var links []link
	var lastItem strictjson.Value
	items := chain.Items()
	for items.Next() {
		v := items.Value()
		lastItem = v
		if v.Kind() != strictjson.KindObject {
			continue
		}
		l := link{obj: v}
		ms := v.Members()
		for ms.Next() {
			mv := ms.Value()
			l.last = mv
			if mv.Kind() != strictjson.KindString {
				continue
			}
			switch string(ms.Key().Text()) {
			case "name":
				l.name = string(mv.Text())
			case "path":
				l.path, l.pathVal = filepath.Clean(string(mv.Text())), mv
			case "sha256":
				l.sha, l.shaVal = string(mv.Text()), mv
			}
		}
		links = append(links, l)
	}
	if err := items.Err(); err != nil {
		return "", err
	}
	var done []string
	for _, l := range links {
		if byName && l.name != e.Name || !byName && l.path != e.Path {
			continue
		}
		if l.path != e.Path {
			if l.pathVal.Kind() == strictjson.KindInvalid {
				ed.insert(end(l.last), `, "path": `+quote(e.Path))
			} else {
				ed.replace(l.pathVal, quote(e.Path))
			}
		}
		switch {
		case l.shaVal.Kind() == strictjson.KindInvalid:
			ed.insert(end(l.last), `, "sha256": `+quote(e.SHA256))
		case !strings.EqualFold(l.sha, e.SHA256):
			ed.replace(l.shaVal, quote(e.SHA256))
		}
		what := fmt.Sprintf("link %q", l.name)
		if strings.EqualFold(l.sha, e.SHA256) && l.path == e.Path {
			what += " (already pinned)"
		}
		done = append(done, what)
	}
	if len(done) > 0 {
		sort.Strings(done)
		return "pinned " + strings.Join(done, ", "), nil
	}
	for _, l := range links {
		if l.name == e.Name {
			return "", fmt.Errorf("a link named %q runs %s, not %s: pass --name to pin that link, or another name to add one", e.Name, l.path, e.Path)
		}
	}
	if lastItem.Kind() == strictjson.KindInvalid {
		indent := lineIndent(doc, key.Offset())
		ed.replace(chain, "[\n"+indent+"  "+item+"\n"+indent+"]")
	} else {
		ed.insert(end(lastItem), ","+spaceBefore(doc, lastItem.Offset())+item)
	}
	return fmt.Sprintf("added link %q", e.Name), nil
}

// editor collects non-overlapping edits of a document.
type editor struct{ edits []edit }

type edit struct {
	start, end int
	text       string
}

func (ed *editor) replace(v strictjson.Value, text string) {
	ed.edits = append(ed.edits, edit{v.Offset(), end(v), text})
}

func (ed *editor) insert(at int, text string) {
	ed.edits = append(ed.edits, edit{at, at, text})
}

// apply makes the edits, from the last to the first.
func (ed *editor) apply(doc []byte) []byte {
	sort.SliceStable(ed.edits, func(i, j int) bool { return ed.edits[i].start > ed.edits[j].start })
	out := append([]byte(nil), doc...)
	for _, e := range ed.edits {
		out = append(out[:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	return out
}

func end(v strictjson.Value) int { return v.Offset() + len(v.Raw()) }

// spaceBefore is the white space just before offset at: how the document
// separates that value from the comma or bracket before it.
func spaceBefore(doc []byte, at int) string {
	i := at
	for i > 0 && strings.IndexByte(" \t\r\n", doc[i-1]) >= 0 {
		i--
	}
	return string(doc[i:at])
}

// lineIndent is the white space that starts the line holding offset at.
func lineIndent(doc []byte, at int) string {
	i := bytes.LastIndexByte(doc[:at], '\n') + 1
	j := i
	for j < at && (doc[j] == ' ' || doc[j] == '\t') {
		j++
	}
	return string(doc[i:j])
}

// lastValueKeyStart finds where the key of the member whose value is v
// starts: back over the value's colon and the key string.
func lastValueKeyStart(doc []byte, v strictjson.Value) int {
	i := v.Offset() - 1
	for i > 0 && doc[i] != ':' {
		i--
	}
	i--
	for i > 0 && strings.IndexByte(" \t\r\n", doc[i]) >= 0 {
		i--
	}
	// doc[i] is the key's closing quote; find its opening quote, which is
	// not preceded by a backslash that is itself unescaped.
	for j := i - 1; j >= 0; j-- {
		if doc[j] == '"' && !escaped(doc, j) {
			return j
		}
	}
	return 0
}

// escaped reports whether the byte at i follows an odd run of backslashes.
func escaped(doc []byte, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && doc[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// marshalLine is e as one line of JSON with a space after each colon and
// comma, the way the documentation writes links.
func marshalLine(e PinEntry) (string, error) {
	if e.Name == "" || e.Path == "" || e.SHA256 == "" {
		return "", errors.New("a pinned link needs a name, a path and a sha256")
	}
	return fmt.Sprintf(`{"name": %s, "path": %s, "sha256": %s}`, quote(e.Name), quote(e.Path), quote(e.SHA256)), nil
}
