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
//	<root>/courier/vouched/<uid>/<escaped requester session>.json          grants the broker vouched for a child (isolation mode)
//
// # Isolation mode
//
// With a non-nil [Layout.Isolation] the broker runs as a user of its own
// and the children as theirs ([Isolation], docs/decisions/0024): the
// broker's user owns the tree, the ask group may only drop requests into
// sticky drop directories and read answers, and every response,
// heartbeat and vouched journal must be the broker's user's.
//
// Everything read from a mailbox is untrusted input: [ReadFile] opens
// regular files only, without following links or blocking, size-capped
// and owned by our uid ([ReadFileOf]: by the owner the mode expects). This package knows nothing of rules, authorizer
// links or terminals.
package mailbox
