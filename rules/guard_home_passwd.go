//go:build !cgo || osusergo

package rules

// userLookupViaNSS says os/user asks the C library, which asks NSS as the
// user's shell does. Without cgo it reads /etc/passwd only, and a user
// known only to NSS (LDAP, sssd) is unknown to it though the shell expands
// their `~name`.
const userLookupViaNSS = false
