package confine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

const (
	cloneNewPID  = syscall.CLONE_NEWPID
	cloneNewNet  = syscall.CLONE_NEWNET
	cloneNewUser = syscall.CLONE_NEWUSER
)

// selfExe is the running binary, whatever became of its path.
const selfExe = "/proc/self/exe"

// probeTimeout bounds one trial start of the init.
const probeTimeout = 5 * time.Second

// Probe finds which confinements work here, by starting the init (this
// very executable with Command) in each namespace set, best first: a user
// namespace with PID and network namespaces (any user where the kernel
// allows unprivileged user namespaces), then the PID and network
// namespaces alone (root), then without the network namespace. It reads
// the kernel's Landlock ABI. It costs one or a few short process starts.
//
// Call it only from a program whose main hands Command to Main.
func Probe(ctx context.Context) *Plan {
	p := &Plan{}
	abi, err := ll.LandlockGetABIVersion()
	switch {
	case err != nil:
		p.Missing = append(p.Missing, landlockMissing(0, fmt.Sprintf("Landlock is unavailable (%v)", err))...)
	default:
		p.landlock = abi
		p.Missing = append(p.Missing, landlockMissing(abi, fmt.Sprintf("the kernel's Landlock ABI is %d", abi))...)
	}
	var errs []string
	for _, try := range []struct {
		flags  uintptr
		userns bool
	}{
		{cloneNewPID | cloneNewNet, true},
		{cloneNewPID | cloneNewNet, false},
		{cloneNewPID, true},
		{cloneNewPID, false},
		{0, false},
	} {
		err := trial(ctx, try.flags, try.userns)
		if err == nil {
			p.nsFlags, p.userns, p.initOK = try.flags, try.userns, true
			break
		}
		errs = append(errs, err.Error())
	}
	why := strings.Join(errs, "; ")
	switch {
	case !p.initOK:
		// Nothing runs: the plugins start as before, unconfined.
		p.Missing = append([]Missing{{"plugin init", "the confinement init did not run (" + why + "): plugins run with no confinement but their process group"}}, p.Missing...)
		p.Missing = append(p.Missing, pidMissing(why), netMissing(why))
	case p.nsFlags == 0:
		p.Missing = append(p.Missing, pidMissing(why), netMissing(why))
	case p.nsFlags&cloneNewNet == 0:
		p.Missing = append(p.Missing, netMissing(why))
	}
	return p
}

func pidMissing(why string) Missing {
	return Missing{"pid namespace", "no PID namespace could be made (" + why + "): a plugin that clears its parent-death signal, or a helper it starts with setsid, can outlive the broker"}
}

func netMissing(why string) Missing {
	return Missing{"network namespace", "no network namespace could be made (" + why + "): a link that did not declare \"network\" keeps the network, but for what Landlock's TCP rules refuse"}
}

// trial starts the init in probe mode with flags and waits for its line.
func trial(ctx context.Context, flags uintptr, userns bool) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, selfExe, Command, "--probe")
	cmd.SysProcAttr = nsAttr(flags, userns)
	cmd.Env = []string{}
	cmd.Dir = "/"
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	name := nsName(flags, userns)
	if err := cmd.Run(); err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return fmt.Errorf("%s: %w", name, err)
		}
		return fmt.Errorf("%s: init %w: %s", name, err, strings.TrimSpace(errOut.String()))
	}
	if strings.TrimSpace(out.String()) != probeLine {
		return fmt.Errorf("%s: %s %s did not answer as the plugin init (does this program dispatch it?)", name, selfExe, Command)
	}
	return nil
}

func nsName(flags uintptr, userns bool) string {
	var parts []string
	if userns {
		parts = append(parts, "user")
	}
	if flags&cloneNewPID != 0 {
		parts = append(parts, "pid")
	}
	if flags&cloneNewNet != 0 {
		parts = append(parts, "net")
	}
	if len(parts) == 0 {
		return "no namespaces"
	}
	return strings.Join(parts, "+") + " namespaces"
}

// nsAttr is the SysProcAttr that makes the namespaces: with a user
// namespace, the broker's own uid and gid are mapped to themselves, so
// the plugin runs as the same user with no capabilities outside it.
func nsAttr(flags uintptr, userns bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Cloneflags: flags}
	if userns {
		attr.Cloneflags |= cloneNewUser
		uid, gid := os.Geteuid(), os.Getegid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	return attr
}

// Wrap turns the start of a plugin (argv, with argv[0] the configured
// path; the verified binary open as the child's fd 3; tmp its private
// directory) into the start of its init: the path and arguments to run
// instead, and the SysProcAttr, parent-death signal and own process group
// included. network keeps the host's network for a link that declared it.
// ok is false when p confines nothing: start the plugin itself.
func (p *Plan) Wrap(argv []string, tmp string, network bool) (path string, args []string, attr *syscall.SysProcAttr, ok bool) {
	if !p.Confines() {
		return "", nil, nil, false
	}
	flags := p.nsFlags
	args = []string{selfExe, Command, "--rw", tmp}
	if network {
		flags &^= cloneNewNet
		args = append(args, "--network")
	}
	args = append(append(args, "--"), argv...)
	attr = nsAttr(flags, p.userns && flags != 0)
	attr.Setpgid = true
	attr.Pdeathsig = syscall.SIGKILL
	return selfExe, args, attr, true
}
