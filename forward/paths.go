package forward

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// maxLinkHops bounds the symbolic links followed while resolving one path,
// as the kernel's ELOOP does.
const maxLinkHops = 40

// errLinkLoop is the error for a path whose links do not end.
var errLinkLoop = errors.New("too many symbolic links (a loop?)")

// maxPathLen is the kernel's PATH_MAX: no system call takes a longer
// path (ENAMETOOLONG), and resolving one costs a join of the whole prefix
// per component, quadratic in its length (32 KiB of `/a` took 2.7 s).
const maxPathLen = 4096

// errPathTooLong is the error for a path longer than maxPathLen.
var errPathTooLong = errors.New("longer than PATH_MAX (4096 bytes), which no system call takes")

// ResolvePath resolves the symbolic links of the absolute path p,
// component by component as the kernel does (a `..` climbs from where the
// links so far led), including a link whose target does not exist and the
// links of the existing part of a path that does not: the result is where
// a write to p would land. A component that cannot be read is kept as
// written. Only a loop, and a path longer than PATH_MAX, are errors.
func ResolvePath(p string) (string, error) {
	if len(p) > maxPathLen {
		return "", errPathTooLong
	}
	parts := splitPath(p)
	resolved := "/"
	for hops := 0; len(parts) > 0; {
		c := parts[0]
		parts = parts[1:]
		if c == ".." {
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", errLinkLoop
		}
		target, err := os.Readlink(next)
		if err != nil {
			resolved = next
			continue
		}
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		parts = append(splitPath(target), parts...)
	}
	return resolved, nil
}

// splitPath splits p at its slashes, dropping empty and `.` components.
func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}
