// Package bench is courier's end-to-end benchmark: it starts real
// `broker serve` processes on fresh mailbox roots, drives them with
// requesters built on the child library (package forward) and with real
// `child` processes, and reports its figures (BENCHMARKS.md) side by side for
// tmpfs and for the project's disk, next to the polling design courier
// replaces. cmd/courier-bench is its command; `make bench` runs it.
//
// # What is measured
//
// A round trip is timed in the requester, from before its request is
// built to the decision in hand: forward.Client.Forward arms its watch,
// writes the request atomically, waits, reads and removes the answer.
// The requesters of one run share one forward.Client, as the subagents of
// an in-process host would: each is its own child session, and one inotify
// watch of the broker's responses/ serves them all. The Client is closed
// when the run ends, so its start-up is inside the measured CPU and its
// watch does not outlive the run; a real `child ask` process has a Client
// of its own.
// Every answer is checked (decided by a rule, by the plugin link, or
// "unavailable" from the terminal, as the workload expects); an ask that
// got anything else is counted as failed and kept out of the latencies.
// Requesters run closed loops: each asks, waits and asks again, so the
// rate at N requesters is the rate N children asking back to back get.
// Percentiles are nearest-rank: every figure is a latency that was
// actually measured. Runs that make a number of asks also stop after a
// time cap, and scenarios not started within the run's budget are
// skipped and reported, so that a loaded machine and a slow disk keep the
// whole run under five minutes; every figure carries its n.
//
// Scenarios, each on its own broker and root:
//
//   - rule: the default rules allow `git status --short`. The broker idle
//     for 10 s as it starts; latency at one requester, rates at 1, 8 and 32;
//     what the bash parser costs: one requester asks in turn on a tool
//     surface allowed by the bench config (the defaults plus one
//     `webfetch` rule; nothing parses it), the one-command line and a
//     three-command line, so drift lands on all three alike, and the
//     difference of the p50s is the parse on both sides (target ≤ 50 µs);
//     the same ask in turn into the inbox as it is and into an inbox a pi
//     child's cleanup removed after the previous exchange (requests/,
//     responses/, the session directory), which the child makes again
//     (target: p99 within 2 ms of the steady p99); then the same broker
//     idle for 10 s again. Idle
//     CPU is utime+stime from /proc/<pid>/stat (10 ms ticks, the resolution
//     of the target itself) and the schedstat on-CPU time of every thread
//     (nanoseconds).
//   - child: real processes on the agent's critical path, in rounds whose
//     order rotates: `child ask` and `child hook claude-code` (a subagent's
//     PermissionRequest) for the rule-resolved ask, `child ask` with no
//     parent (it decides at once), a Go program that does nothing (process
//     start and exit alone: cmd/courier-bench/courier-bench-noop), and the
//     same ask in the library. A process's own work is its p50 minus the
//     do-nothing program's (issue 17's target: ≤ 1.5 ms for ask and hook);
//     each process's user+system time is reported beside. The in-library
//     asks look for their answers as a child does and hold no watch of
//     responses/: one held by the driver would spare the children's exits
//     the teardown of their own watches (docs/decisions/0021).
//   - plugin, shadow: the read-only allow-list plugin as one enforcing link
//     (it allows `cat README.md`, which the default rules leave to ask), and
//     as one shadow link (consulted beside, never waited for; the ask then
//     reaches the headless terminal and is "unavailable").
//   - poll: broker and requesters both scanning every 250 ms, pi's design,
//     on the same rule-resolved workload.
//   - tty: the broker's terminal is the operator's prompt on a
//     pseudo-terminal the driver drains and nobody answers. The
//     rule-resolved round trip in rounds that alternate without and with one
//     ask held at the prompt; then 10,000 asks dropped into the inbox and held in the
//     prompt's queue (the broker's bounds on waiting asks lifted): the broker's VmRSS once all are there, its CPU while
//     holding them, and the orderly stop that answers them all.
//   - backlog: 10,000 rule-resolved requests written before the broker
//     starts; from starting the process to the last response file.
//   - nats (the run's first filesystem only, about 35 s; issue 21): one
//     `broker serve --terminal deny --nats URL --nats-local` serving its
//     file inbox and a NATS JetStream server this process embeds
//     (natsembed, a free loopback port, its store under the run's base).
//     The rule-resolved round trip at one requester through both
//     transports in turn, ask by ask (forward.Client with its watch; a
//     long-lived natsforward.Client with a connection of its own); the
//     rates of each at 1, 8 and 32 requesters; real `child ask`
//     processes over the mailbox and with `--transport nats://…` (which
//     execs courier-child-nats), in turn. Then three embedded servers
//     routed into a cluster, the broker given every URL and
//     --nats-replicas 3, the requesters connected to a node other than
//     the broker's: the round trip (file asks in turn on the same broker)
//     and the NATS rate at 8 requesters. Every NATS figure stands beside
//     the file figure of the same run, with their ratio. The engine runs
//     in this process, so the requesters' CPU per NATS ask includes the
//     server's.
//
// Two more run only when --only names them (a minute and a half, and
// gigabytes written):
//
//   - flood (tmpfs only): --terminal deny; rounds alternate a legitimate
//     requester's rule-resolved asks with nothing else asking and while a
//     flood writer (`courier-bench flood-writer`, a process of its own, as
//     a hostile subagent) writes asks into the inbox as fast as it can.
//   - floodtty (tmpfs only): the same at the tty prompt, whose bound per
//     requester holds 64 of the flood's asks and refuses the rest; then a
//     fresh tty broker holding 3,000 asks with payloads of about 1 MiB, and
//     its VmRSS.
//
// # Clean-up
//
// Every broker runs in its own process group (a session, for the tty
// one) with a parent-death signal, and is stopped with SIGINT, then
// killed, on every path out of Run, an interrupted run included; every
// root is removed.
package bench
