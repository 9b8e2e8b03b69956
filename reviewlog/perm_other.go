//go:build !unix

package reviewlog

// openNonBlock is zero where FIFOs cannot stand in for the log.
const openNonBlock = 0

// restrictDir does nothing where Unix modes do not apply; access to the log
// there is governed by the platform's own ACLs.
func restrictDir(string) error { return nil }
