// Package plugins runs courier's authorizer plugins on the broker's side:
// it loads the operator's authorizerChain into a [chain.Chain] whose links
// are plugin processes, each under a supervisor.
//
// What a plugin sees and may answer is package authorizer; the protocol
// (handshake, protobuf service, conversions) is package plugins/protocol;
// a plugin author uses package plugins/sdk. Example plugins live in
// cmd/courier-authz-*.
//
// # Hazards this package survives
//
// A plugin is third-party code in another process; nothing it does may
// crash, stall or fool the broker, and nothing may make a link allow what
// it did not allow (go-plugin v1.8.0's known hazards are the checklist):
//
//   - A missing binary, one that is not a regular executable file, one
//     that group or others may write, or one whose SHA-256 differs from the
//     pinned sum disables the link at load, with an error and an
//     authorizer_link.disabled review entry; every ask then gets the link's
//     failure verdict. The sum is computed afresh, from the opened file,
//     before every start, and on Linux that same open file is what gets
//     executed (/proc/self/fd), so the binary cannot be swapped between
//     check and exec.
//   - Each call has a deadline. A crash, a hang past the deadline, a panic
//     or a malformed answer fails the call into the link's failure verdict
//     (deny or defer, never allow) and retires the process; the next ask
//     starts a fresh one, after an exponential backoff when failures
//     repeat. A generation check makes N concurrent failures of one process
//     cause one restart.
//   - Plugin output is untrusted. go-plugin's own parser of plugin stderr
//     panics the whole host on {"@message": 1}; it is switched off (the
//     logger it would feed reports level Off) and this package parses
//     stderr itself, type-checked, line-capped and rate-limited. Stdout
//     before the handshake fails that start; after it, go-plugin reads
//     and discards raw stdout, and stderr (and what a plugin streams
//     through GRPCStdio) goes to the diagnostic log, capped. Replies are
//     capped at 1 MiB.
//   - A start that fails is explained from what the plugin did (its first
//     stdout line, checked field by field; its exit status; the TLS or
//     gRPC error of its first call) in words that do not assume Go, with
//     the contract (docs/PLUGINS.md) on a line of its own.
//   - The diagnostic log can be kept in the review log
//     ([ReviewLogWriter]), within a budget per link, so a chatty plugin
//     cannot rotate the operator's decisions out of it.
//   - The plugin gets no part of the broker's environment: only PATH, a
//     private TMPDIR (also where its socket lives) and go-plugin's
//     variables. It runs in "/" with empty stdin, in its own process group
//     (killed as a group), and on Linux it receives SIGKILL when the broker
//     dies (Pdeathsig). Closing the chain kills every plugin and waits for
//     go-plugin's goroutines; a plugin that does not exit when asked is
//     killed after 500 ms.
//   - With Options.Confinement (package confine, decision 0022) the
//     plugin runs under an init in a PID namespace of its own, so its
//     whole tree dies with the broker even if it clears its parent-death
//     signal and forks setsid helpers; in a Landlock domain that reads only
//     system directories and writes only its private directory (not the
//     mailbox, the agent directory, $HOME or /proc); and, unless its link
//     declares "network", in a network namespace of its own.
//   - Only gRPC with automatic mutual TLS is accepted; clients are not
//     "managed" (go-plugin's global client list would grow with every
//     restart).
package plugins
