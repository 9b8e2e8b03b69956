//go:build !linux

package confine

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"syscall"
)

// Namespace flags do not exist outside Linux; these keep Summary
// portable.
const (
	cloneNewPID = 1 << iota
	cloneNewNet
)

// Probe reports that nothing is available outside Linux: no PID or
// network namespaces and no Landlock.
func Probe(context.Context) *Plan {
	why := "not available on " + runtime.GOOS
	p := &Plan{Missing: []Missing{
		{"pid namespace", why + ": a plugin or a helper it starts in another process group can outlive a broker killed with SIGKILL"},
		{"network namespace", why + ": a link that did not declare \"network\" keeps the network"},
	}}
	p.Missing = append(p.Missing, landlockMissing(0, why)...)
	return p
}

// SealInherited does nothing outside Linux: a plugin there is not
// confined, so an inherited descriptor defeats nothing it would enforce.
func SealInherited() error { return nil }

// Wrap confines nothing outside Linux.
func (p *Plan) Wrap([]string, string, bool) (string, []string, *syscall.SysProcAttr, bool) {
	return "", nil, nil, false
}

// Main refuses: there is no init outside Linux.
func Main(_ []string, _, stderr io.Writer) int {
	fmt.Fprintf(stderr, "courier %s: not available on %s\n", Command, runtime.GOOS)
	return 2
}
