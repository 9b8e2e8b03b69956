package agenthook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/internal/strictjson"
)

// Surfaces of the asks a hook event maps to, beyond pi's own (bash,
// path_read, path_write, mcp). WebFetch and WebSearch get surfaces of
// their own, as any tool pi does not know does: its name.
const (
	SurfaceWebFetch  = "web_fetch"
	SurfaceWebSearch = "web_search"
	// SurfaceMCP is pi's surface for MCP tools; the value is
	// "server:tool", the form pi's suggestion (`exa:*`) and rules name.
	SurfaceMCP = "mcp"
)

// MaxToolValue bounds the value of an ask on an unknown tool's surface
// (its canonical tool_input). An input over it is not forwarded: a cut
// value would ask for less than the tool does.
const MaxToolValue = 16 << 10

// Asks maps ev's tool call to the asks pi's child gate would forward for
// it, with session and agent as the requester. Each tool's input fields
// are checked; an error names the field. Several asks come back only for
// an apply_patch touching several files.
func Asks(ev Event, session, agent string) ([]forward.Ask, error) {
	in, err := toolInput(ev.ToolInput)
	if err != nil {
		return nil, err
	}
	base := forward.Ask{Session: session, Agent: agent, Cwd: ev.Cwd}
	one := func(surface, value, tool string) ([]forward.Ask, error) {
		a := base
		a.Surface, a.Value, a.Tool = surface, value, tool
		return []forward.Ask{a}, nil
	}
	path := func(surface, key, tool string) ([]forward.Ask, error) {
		p, err := required(in, "tool_input.", key)
		if err != nil {
			return nil, err
		}
		asks, err := pathAsks(base, surface, p, tool)
		if err != nil {
			return nil, fmt.Errorf("%w: tool_input.%s: %q: %w", ErrEvent, key, p, err)
		}
		return asks, nil
	}
	switch name := ev.ToolName; name {
	case "Bash":
		cmd, err := required(in, "tool_input.", "command")
		if err != nil {
			return nil, err
		}
		return one("bash", cmd, "")
	case "Write", "Edit", "MultiEdit":
		return path("path_write", "file_path", strings.ToLower(name))
	case "NotebookEdit":
		return path("path_write", "notebook_path", "notebook_edit")
	case "Read":
		return path("path_read", "file_path", "read")
	case "Glob", "Grep":
		return searchAsk(base, in, name)
	case "WebFetch":
		u, err := required(in, "tool_input.", "url")
		if err != nil {
			return nil, err
		}
		return one(SurfaceWebFetch, u, "")
	case "WebSearch":
		q, err := required(in, "tool_input.", "query")
		if err != nil {
			return nil, err
		}
		return one(SurfaceWebSearch, q, "")
	case "apply_patch":
		return patchAsks(base, in)
	default:
		if readings := mcpValues(name); len(readings) > 0 {
			a := base
			a.Surface, a.Value, a.Tool, a.Match = SurfaceMCP, readings[0], name, readings[1:]
			return []forward.Ask{a}, nil
		}
		if err := checkUnknownTool(name); err != nil {
			return nil, err
		}
		value, err := canonicalInput(ev.ToolInput)
		if err != nil {
			return nil, err
		}
		return one(name, value, "")
	}
}

// toolInput reads tool_input's members.
func toolInput(raw []byte) (map[string]strictjson.Value, error) {
	m, err := members(strictjson.Root(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: tool_input: %w", ErrEvent, err)
	}
	return m, nil
}

// searchAsk maps Glob and Grep to a path_read of the directory searched:
// their path, else cwd. A Glob pattern reads wherever it reaches, so the
// directory is widened to cover it (globDir). The directory is never
// narrower than what the search reads, and is asked for in every reading
// of its path (pathAsks).
func searchAsk(base forward.Ask, in map[string]strictjson.Value, tool string) ([]forward.Ask, error) {
	dir, err := str(in, "tool_input.", "path")
	if err != nil {
		return nil, err
	}
	if dir == "" {
		dir = base.Cwd
	}
	if tool == "Glob" {
		pattern, err := required(in, "tool_input.", "pattern")
		if err != nil {
			return nil, err
		}
		dir = globDir(dir, pattern)
	}
	asks, err := pathAsks(base, "path_read", dir, strings.ToLower(tool))
	if err != nil {
		return nil, fmt.Errorf("%w: tool_input.path: %q: %w", ErrEvent, dir, err)
	}
	return asks, nil
}

// globPrefix is the literal directory a glob pattern starts from (its
// parts before the first wildcard, the last part excepted: that names
// what is matched), as written, `..` included, for pathAsks to read both
// ways. anywhere says the pattern can reach outside any such directory:
// a home directory (`~`), a brace alternative that is absolute
// (`{/etc,src}/*`), or a `..` after a wildcard, which climbs from
// wherever the wildcard matched, a link's target included.
func globPrefix(pattern string) (prefix string, anywhere bool) {
	if strings.HasPrefix(pattern, "~") || strings.Contains(pattern, "{/") || strings.Contains(pattern, ",/") {
		return "", true
	}
	parts := strings.Split(pattern, "/")
	var lit []string
	wild := false
	for i, part := range parts {
		if part == "" {
			continue
		}
		if !wild && (strings.ContainsAny(part, "*?[{\\") || i == len(parts)-1) {
			wild = true
		}
		switch {
		case !wild:
			lit = append(lit, part)
		case strings.Contains(part, ".."):
			// `..`, alone or inside a brace alternative (`{..,a}`).
			return "", true
		}
	}
	prefix = strings.Join(lit, "/")
	if filepath.IsAbs(pattern) {
		prefix = "/" + prefix
	}
	return prefix, false
}

// globDir is the directory a glob pattern, read from dir, cannot leave,
// as written: pathAsks reads it lexically and through links.
func globDir(dir, pattern string) string {
	prefix, anywhere := globPrefix(pattern)
	switch {
	case anywhere:
		return "/"
	case filepath.IsAbs(prefix):
		return prefix
	case prefix != "":
		return dir + "/" + prefix
	}
	return dir
}

// mcpValues are the readings of an MCP tool's name as pi's mcp value,
// "server:tool", the first split first: a name with more "__" than its
// two separators (mcp__a__b__c) names server "a" and tool "b__c", or
// server "a__b" and tool "c", and the agent does not say which. Every
// reading is asked for (a deny of any denies; an allow needs all). None
// for a name that is not an MCP tool's, nor for one longer than any
// agent's tool name (maxToolName): a name of n underscores has about n
// readings of n bytes each (32 KiB of them were a gigabyte).
func mcpValues(name string) []string {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok || len(name) > maxToolName {
		return nil
	}
	var out []string
	for i := 0; i+2 <= len(rest); i++ {
		if rest[i] != '_' || rest[i+1] != '_' {
			continue
		}
		server, tool := rest[:i], rest[i+2:]
		if server != "" && tool != "" {
			out = append(out, server+":"+tool)
		}
	}
	return out
}

// reservedSurfaces are the surfaces courier's rules give a meaning of
// their own (pi's tools, the path families, MCP, the web surfaces), and
// the tools the adapter maps by name. An unknown tool whose name reads as
// one of them in any letter case is refused, not made a surface of its
// own: the agents never send such a name (they send Bash, Read...), and
// `bash` or `path_read` taken as a surface would be matched by the
// rules written for that surface against a value they do not expect.
var reservedSurfaces = []string{
	"bash", "read", "write", "edit", "multiedit", "notebookedit", "find", "grep", "glob", "ls",
	"path", "path_read", "path_write", "external_directory", "external_directory_read", "external_directory_write",
	SurfaceMCP, SurfaceWebFetch, SurfaceWebSearch, "webfetch", "websearch", "apply_patch",
}

// maxToolName bounds a tool's name: an unknown tool's becomes a surface,
// an MCP tool's is read every way it splits (mcpValues). The model APIs
// allow no longer tool name.
const maxToolName = 128

// checkUnknownTool reports why name cannot be an unknown tool's surface:
// a name reserved in another spelling (reservedSurfaces), an mcp__ name
// that names no server and tool, or one with characters no agent's tool
// name has (spaces, controls, quotes: `Bash `).
func checkUnknownTool(name string) error {
	if len(name) > maxToolName {
		return fieldError("tool_name", "expected at most %d bytes, got %d", maxToolName, len(name))
	}
	for _, r := range reservedSurfaces {
		if strings.EqualFold(name, r) {
			return fieldError("tool_name", "%q reads as %q, a tool or surface mapped by its exact name only: expected a tool name the agent sends", name, r)
		}
	}
	if len(name) >= 5 && strings.EqualFold(name[:5], "mcp__") {
		return fieldError("tool_name", "%q: expected an MCP tool's name as mcp__<server>__<tool>", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-.:", c) >= 0) {
			return fieldError("tool_name", "%q: expected letters, digits, '_', '-', '.' or ':', got %q at byte %d", name, c, i)
		}
	}
	return nil
}

// canonicalInput is an unknown tool's input as its ask's value: compact
// JSON with its keys sorted at every level and numbers as written, so one
// input always asks the same, bounded by MaxToolValue.
func canonicalInput(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("%w: tool_input: %w", ErrEvent, err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("%w: tool_input: %w", ErrEvent, err)
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if len(out) > MaxToolValue {
		return "", fieldError("tool_input", "%d bytes as canonical JSON, over the %d an unknown tool's ask may carry", len(out), MaxToolValue)
	}
	return out, nil
}
