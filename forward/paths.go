package forward

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinkHops bounds the symbolic links followed while resolving one path,
// as the kernel's ELOOP does.
const maxLinkHops = 40

// errLinkLoop is the error for a path whose links do not end.
var errLinkLoop = errors.New("too many symbolic links (a loop?)")

// maxPathLen is the longest path a system call takes (PATH_MAX, 4,096,
// counts the NUL). A longer one cannot be looked at in one call, though the
// kernel may still reach its place (a relative path from a deep cwd, links
// that lead far), and resolving it component by component costs a join of
// the whole prefix per component, quadratic in its length (32 KiB of `/a`
// took 2.7 s).
const maxPathLen = 4095

// errPathTooLong is the error for a path longer than maxPathLen: where it
// lands is unknown, so it is never kept as written.
var errPathTooLong = errors.New("longer than PATH_MAX allows (4,095 bytes): where it lands cannot be looked at")

// errResolvedTooLong is the error for a path whose links lead through a
// place longer than PATH_MAX: the kernel follows it, a look here cannot.
var errResolvedTooLong = errors.New("its links lead through a place longer than PATH_MAX, which cannot be looked at")

// tooLongToLook says ResolvePath could not look where p leads because a
// path was past PATH_MAX (errPathTooLong, errResolvedTooLong): unlike a
// loop, the kernel may still land somewhere, which is unknown.
func tooLongToLook(err error) bool {
	return errors.Is(err, errPathTooLong) || errors.Is(err, errResolvedTooLong)
}

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
		if errors.Is(err, syscall.ENAMETOOLONG) {
			// The kernel walks on from each directory and has no limit
			// on the whole; a prefix this long cannot be looked at here,
			// so where the rest lands is unknown: never kept as written.
			return "", errResolvedTooLong
		}
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
