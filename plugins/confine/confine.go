// Package confine runs an authorizer plugin confined: in a PID namespace
// of its own whose init the plugin cannot outlive, with a Landlock view of
// the filesystem that holds neither the mailbox nor the agent directory nor
// the home directory, without ptrace or /proc access to the broker's
// processes, and without a network unless its link declares one.
//
// The init is the broker's own binary re-executed with the hidden
// subcommand [Command] (its main hands the arguments to [Main]). It is the
// namespace's process 1, started with a parent-death SIGKILL from the
// plugin host's forking thread; when it dies, or when the plugin it
// started exits, the kernel kills every process of the namespace, so a
// plugin that clears its own parent-death signal, or a helper that calls
// setsid, still dies with the broker. Where a PID namespace cannot be made
// (no user namespaces for this user, not root, not Linux), the init only
// applies Landlock and executes the plugin in its own place.
//
// [Probe] finds, once at start, which confinements this machine gives;
// the broker says which are missing and still runs its plugins.
package confine

import (
	"fmt"
	"strings"
)

// Command is the hidden subcommand of the broker's binary that runs as a
// confined plugin's init. A program that uses [Probe] dispatches it to
// [Main] before anything else.
const Command = "plugin-init"

// probeLine is what the init prints in probe mode, so that Probe knows it
// ran the init and not some other program's main.
const probeLine = "courier-plugin-init ok"

// Missing is one confinement this machine does not give plugins.
type Missing struct {
	// Name is the confinement: "pid namespace", "network namespace",
	// "landlock filesystem", "landlock network", "landlock scopes".
	Name string
	// Why is the cause and what a plugin can do in its absence.
	Why string
}

func (m Missing) String() string { return m.Name + ": " + m.Why }

// Plan is how plugins are started on this machine, as Probe found it. The
// nil Plan runs plugins unconfined (their own process group and, on
// Linux, a parent-death signal only).
type Plan struct {
	// nsFlags are the namespace clone flags that work here
	// (CLONE_NEWPID, CLONE_NEWNET, and CLONE_NEWUSER when needed).
	nsFlags uintptr
	// userns: nsFlags needs a user namespace mapping the broker's ids.
	userns bool
	// landlock is the kernel's Landlock ABI version, 0 without Landlock.
	landlock int
	// initOK: the init command runs (the binary dispatches Command).
	initOK bool
	// Missing lists what is not available, one entry per confinement,
	// for the broker to say at start.
	Missing []Missing
}

// Confines reports whether plugins started with p get any confinement
// beyond today's process group.
func (p *Plan) Confines() bool {
	return p != nil && p.initOK && (p.nsFlags != 0 || p.landlock > 0)
}

// Summary is one line naming what plugins get, for the broker's log.
func (p *Plan) Summary() string {
	if !p.Confines() {
		return "none"
	}
	var have []string
	if p.nsFlags&cloneNewPID != 0 {
		have = append(have, "pid namespace")
	}
	if p.nsFlags&cloneNewNet != 0 {
		have = append(have, "network namespace")
	}
	if p.userns {
		have = append(have, "user namespace")
	}
	if p.landlock > 0 {
		have = append(have, fmt.Sprintf("landlock ABI %d", p.landlock))
	}
	return strings.Join(have, ", ")
}

// landlockMissing lists the Landlock confinements an ABI version lacks.
func landlockMissing(abi int, why string) []Missing {
	var out []Missing
	if abi < 1 {
		out = append(out, Missing{"landlock filesystem", why + ": a plugin can read what the broker's user can (the mailbox, the agent directory, the home directory) and ptrace or read /proc of the broker's processes where the kernel's ptrace rules allow"})
	}
	if abi < 4 {
		out = append(out, Missing{"landlock network", why + " (TCP rules need ABI 4): without a network namespace, a link that did not declare \"network\" can still connect"})
	}
	if abi < 6 {
		out = append(out, Missing{"landlock scopes", why + " (scopes need ABI 6): a plugin can signal processes and reach abstract unix sockets outside its sandbox"})
	}
	return out
}
