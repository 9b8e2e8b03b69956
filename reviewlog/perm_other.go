//go:build !unix

package reviewlog

import "os"

// openNonBlock is zero where FIFOs cannot stand in for the log.
const openNonBlock = 0

// restrictDir does nothing where Unix modes do not apply; access to the log
// there is governed by the platform's own ACLs.
func restrictDir(string) error { return nil }

// lockFile does nothing where there is no flock: two processes rotating
// one log at once may lose a rotation there.
func lockFile(*os.File) (unlock func(), err error) { return func() {}, nil }
