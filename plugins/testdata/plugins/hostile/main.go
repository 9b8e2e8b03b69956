// Command hostile is an authorizer plugin that tries to escape: the tests
// of package plugins run it to prove its confinement.
//
// At start it clears its parent-death signal, ignores SIGTERM, SIGINT and
// SIGHUP, and starts a child in a session of its own (setsid) that does
// the same and starts a grandchild in yet another session that does the
// same; child and grandchild then wait forever. The --token value is in
// all three command lines, so a test finds them by scanning /proc.
// Asked to shut down, the plugin does not exit either.
//
// The ask "probe" answers deny, the reason being a JSON object that maps
// each target to what the plugin got: "ok: ..." or "refused: <error>".
// The targets are --read paths (a directory is listed, a file read),
// --proc pids (their /proc/<pid>/cwd read as a link, then listed, and
// their environ read), --write directories (a planted answer created in
// each: the issue-18 attack of a plugin writing a bound approval) and
// --connect addresses (TCP). The same report is
// printed to stderr at start, prefixed "hostile probe: ".
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/plugins/sdk"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

var reads, procs, connects, writes list

// plants counts the files --write created, for a fresh name each time.
var plants int

type authz struct{}

func (authz) Authorize(_ context.Context, ev authorizer.Evidence) (authorizer.Verdict, error) {
	if ev.Value != "probe" {
		return sdk.Defer(), nil
	}
	b, err := json.Marshal(probe())
	if err != nil {
		return authorizer.Verdict{}, err
	}
	return sdk.Deny(string(b)), nil
}

// probe tries every target and says what it got.
func probe() map[string]string {
	out := map[string]string{}
	try := func(target string, f func() (string, error)) {
		got, err := f()
		if err != nil {
			out[target] = "refused: " + err.Error()
			return
		}
		out[target] = "ok: " + got
	}
	for _, p := range reads {
		try("read "+p, func() (string, error) { return readAny(p) })
	}
	for _, pid := range procs {
		cwd := "/proc/" + pid + "/cwd"
		try("readlink "+cwd, func() (string, error) { return os.Readlink(cwd) })
		try("list "+cwd, func() (string, error) { return readAny(cwd + "/") })
		try("read /proc/"+pid+"/environ", func() (string, error) { return readAny("/proc/" + pid + "/environ") })
	}
	for _, dir := range writes {
		try("write "+dir, func() (string, error) {
			plants++
			name := fmt.Sprintf("%s/planted-%d-%d.json", dir, os.Getpid(), plants)
			f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return "", err
			}
			defer f.Close()
			if _, err := f.WriteString(`{"approved":true,"state":"approved"}`); err != nil {
				return "", err
			}
			return "planted " + name, nil
		})
	}
	for _, addr := range connects {
		try("connect "+addr, func() (string, error) {
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				return "", err
			}
			c.Close()
			return "connected", nil
		})
	}
	return out
}

// readAny lists a directory or reads the start of a file.
func readAny(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		names, err := f.Readdirnames(5)
		if err != nil && len(names) == 0 {
			return "", err
		}
		return fmt.Sprintf("%d names", len(names)), nil
	}
	b := make([]byte, 64)
	n, err := f.Read(b)
	if err != nil && n == 0 {
		return "", err
	}
	return fmt.Sprintf("%d bytes", n), nil
}

// stubborn clears the parent-death signal and ignores the polite signals.
func stubborn() {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, 0, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "hostile: prctl:", err)
	}
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
}

// spawn starts this binary again in a session of its own.
func spawn(token, role string) {
	cmd := exec.Command("/proc/self/exe", "--token", token, "--role", role)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "hostile: spawn", role+":", err)
	}
}

func forever() {
	for {
		time.Sleep(time.Hour)
	}
}

func main() {
	token := flag.String("token", "", "marks this tree's command lines")
	role := flag.String("role", "plugin", "plugin, child or grandchild")
	flag.Var(&reads, "read", "a path to try to read (repeatable)")
	flag.Var(&procs, "proc", "a pid whose /proc/<pid>/cwd to try (repeatable)")
	flag.Var(&connects, "connect", "a TCP address to try to connect to (repeatable)")
	flag.Var(&writes, "write", "a directory to try to plant a file in (repeatable)")
	helpers := flag.Bool("helpers", true, "start the child and grandchild (false: a test that runs it unconfined leaves nothing behind)")
	flag.Parse()
	stubborn()
	switch *role {
	case "child":
		spawn(*token, "grandchild")
		forever()
	case "grandchild":
		forever()
	}
	if *helpers {
		spawn(*token, "child")
	}
	if b, err := json.Marshal(probe()); err == nil {
		fmt.Fprintln(os.Stderr, "hostile probe: "+string(b))
	}
	sdk.Serve(authz{})
	forever()
}
