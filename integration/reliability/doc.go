// Package reliability holds courier's reliability and security campaigns
// (docs/RELIABILITY.md tabulates them): the real broker and child
// binaries under broker and child SIGKILLs, a hostile mailbox, a
// sustained flood, other users, planted and forged answers, resource
// faults, watcher faults and plugin faults under load.
//
// Everything is in the tests. `go test ./integration/reliability` runs
// the fast versions (part of `make test`); COURIER_SOAK=1 (`make soak`)
// runs the long campaigns. Each test prints its figures ("reliability
// NAME key=value ...") through t.Log and, when COURIER_FIGURES names a
// file, appends them there; docs/RELIABILITY.md tabulates them.
package reliability
