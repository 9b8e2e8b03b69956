//go:build !unix

package natsbridge

// dirIdentity is "" where a directory's device and inode are not at hand:
// the lease holder is then the host and the root's path alone.
func dirIdentity(string) string { return "" }
