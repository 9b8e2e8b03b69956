package agenthook

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seed6639df8c/courier/forward"
	"github.com/seed6639df8c/courier/internal/strictjson"
)

// MaxPatchFiles bounds the files one apply_patch may be asked for: each is
// an ask of its own, and a human may have to answer each.
const MaxPatchFiles = 64

// patchAsks maps a Codex apply_patch (the patch text in tool_input.command)
// to one path_write ask per file it touches: added, updated, deleted, or
// moved to. A patch whose files cannot all be read is an error, never an
// ask for the files that could.
func patchAsks(base forward.Ask, in map[string]strictjson.Value) ([]forward.Ask, error) {
	patch, err := required(in, "tool_input.", "command")
	if err != nil {
		return nil, err
	}
	files, err := PatchFiles(patch)
	if err != nil {
		return nil, fmt.Errorf("%w: tool_input.command: %w", ErrEvent, err)
	}
	asks := make([]forward.Ask, 0, len(files))
	for _, f := range files {
		fa, err := pathAsks(base, "path_write", f, "apply_patch")
		if err != nil {
			return nil, fmt.Errorf("%w: tool_input.command: %q: %w", ErrEvent, f, err)
		}
		for _, a := range fa {
			if !filepath.IsAbs(f) {
				a.Floor = FloorUnplacedPatchPath
			}
			if !slices.ContainsFunc(asks, func(have forward.Ask) bool { return have.Value == a.Value && have.Boundary == a.Boundary }) {
				asks = append(asks, a)
			}
		}
	}
	if len(asks) > MaxPatchFiles {
		return nil, fieldError("tool_input.command", "the patch names %d places to write, over the %d one event may ask for", len(asks), MaxPatchFiles)
	}
	return asks, nil
}

// FloorUnplacedPatchPath is the floor on the asks for a patch's relative
// paths: Codex resolves them in the directory of the call that applies
// the patch (exec_command's workdir, or a `cd dir &&` before an
// apply_patch heredoc), which the event does not carry, so the hook's
// reading in the event's cwd may not be where the write lands. A floor
// keeps the broker's rules from allowing such a path: a human answers (or
// a grant a human gave); a rule's deny still denies.
const FloorUnplacedPatchPath = "<patch-path-in-unknown-directory>"

// The markers of Codex's patch format that name a file.
var fileMarkers = []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "}

// PatchFiles returns the files a Codex patch touches, as written, in
// order: every path after an Add File, Update File, Delete File or Move
// to marker. The patch must hold a Begin Patch and an End Patch line.
//
// It reads more than Codex's parser, never less: a marker is found on any
// line, its spaces trimmed (a context line that reads like one adds a
// file, it cannot hide one), and any other line starting with "***" than
// the ones the format defines is an error rather than skipped.
func PatchFiles(patch string) ([]string, error) {
	var files []string
	begun, ended := false, false
	for n, line := range strings.Split(patch, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "***") {
			continue
		}
		switch t {
		case "*** Begin Patch":
			begun = true
			continue
		case "*** End Patch":
			ended = true
			continue
		case "*** End of File":
			continue
		}
		found := false
		for _, m := range fileMarkers {
			p, ok := strings.CutPrefix(t, m)
			if !ok {
				continue
			}
			p = strings.TrimSpace(p)
			if p == "" || strings.ContainsRune(p, 0) {
				return nil, fmt.Errorf("line %d: %q names no usable path", n+1, t)
			}
			files = append(files, p)
			found = true
			break
		}
		if !found {
			return nil, fmt.Errorf("line %d: %q is not a line of the patch format (expected Add File, Update File, Delete File, Move to, End of File)", n+1, t)
		}
	}
	switch {
	case !begun || !ended:
		return nil, fmt.Errorf("expected a patch between *** Begin Patch and *** End Patch lines")
	case len(files) == 0:
		return nil, fmt.Errorf("the patch names no file")
	case len(files) > MaxPatchFiles:
		return nil, fmt.Errorf("the patch names %d files, over the %d one ask may carry", len(files), MaxPatchFiles)
	}
	return files, nil
}
