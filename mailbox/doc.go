// Package mailbox is courier's filesystem transport for
// pi-permission-system's permission-forwarding mailbox: the on-disk
// layout, atomic writes, safe reads, watching, liveness and sweeping. The
// documents it carries are package wire's.
//
// # Layout
//
//	<root>/sessions/<encodeURIComponent(serving session)>/requests/<id>.json   written by children
//	<root>/sessions/<encodeURIComponent(serving session)>/responses/<id>.json  written by the broker
//	<root>/serving/<encodeURIComponent(serving session)>.json                  the broker's heartbeat
//	<root>/courier/serving/<escaped serving session>.lock                     courier's serving lock (flock, one broker per session)
//	<root>/courier/grants/<broker|child>/<escaped session>.json               grant journals (package grants)
//
// Everything read from a mailbox is untrusted input: [ReadFile] opens
// regular files only, without following links or blocking, size-capped
// and owned by our uid. This package knows nothing of rules, authorizer
// links or terminals.
package mailbox
