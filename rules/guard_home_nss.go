//go:build cgo && !osusergo

package rules

// userLookupViaNSS says os/user asks the C library, which asks NSS as the
// user's shell does: a user it does not know, the shell does not know
// either, and leaves `~name` as it is.
const userLookupViaNSS = true
