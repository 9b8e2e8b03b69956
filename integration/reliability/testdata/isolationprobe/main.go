// Command isolationprobe acts for the isolation campaign
// (integration/reliability, isolation*_test.go) as a user the test starts
// it as: the attacker at the child's uid, or the upper session one hop
// above a relaying broker. The test, root, cannot act as another uid in
// its own process.
//
//	isolationprobe write SRC DST...
//	    copies SRC to each DST as an attacker would: a temp file beside
//	    DST renamed onto it, else DST created in place, making missing
//	    directories. One line per DST: "ok DST" or "<errno> DST".
//	isolationprobe list DIR...
//	    lists each DIR: "ok DIR" or "<errno> DIR".
//	isolationprobe signal PID
//	    checks whether it may signal PID (kill with signal 0: the
//	    permission check of every signal, nothing sent): "ok PID" or
//	    "<errno> PID".
//	isolationprobe readlink PATH...
//	    reads each link (/proc/PID/cwd): "ok PATH" or "<errno> PATH".
//	isolationprobe forge --root R --session S [--watch]
//	    writes a correctly bound approval for each request id read from
//	    stdin, one per line (or, with --watch, for each request that
//	    appears in requests/): it reads the request file, computes its
//	    digest (wire.RequestDigest) and publishes the answer. One line per
//	    id: "ok ID", "read:<errno> ID" or "write:<errno> ID". --watch also
//	    watches the staging directory (tmp/), where the child writes its
//	    request before renaming it into requests/, and forges from the
//	    staged bytes; it prints "watching -" once both watches hold, or
//	    "watch:<errno> -" for the first refused, and then exits.
//	isolationprobe upper --root R --session S [--broker-uid N --group G]
//	    serves session S as a peer would: a heartbeat announcing the
//	    binding, and every request in its inbox answered with a bound
//	    approved_for_session ("answered ID" on stdout), until stdin closes.
//	    --broker-uid makes it the isolation mode's broker side.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/provenance"
	"github.com/seed6639df8c/courier/wire"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: isolationprobe write|list|signal|readlink|forge|upper ...")
	}
	var err error
	switch os.Args[1] {
	case "write":
		err = write(os.Args[2:])
	case "list":
		for _, dir := range os.Args[2:] {
			_, lerr := os.ReadDir(dir)
			outcome(lerr, dir)
		}
	case "signal":
		for _, arg := range os.Args[2:] {
			pid, perr := strconv.Atoi(arg)
			if perr != nil {
				fail(perr.Error())
			}
			outcome(syscall.Kill(pid, 0), arg)
		}
	case "readlink":
		for _, path := range os.Args[2:] {
			_, lerr := os.Readlink(path)
			outcome(lerr, path)
		}
	case "forge":
		err = forge(os.Args[2:])
	case "upper":
		err = upper(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err.Error())
	}
}

// outcome prints "ok WHAT" or "<errno> WHAT".
func outcome(err error, what string) {
	if err != nil {
		fmt.Println(errnoName(err), what)
	} else {
		fmt.Println("ok", what)
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "isolationprobe:", msg)
	os.Exit(2)
}

// errnoName is the errno under err ("EACCES"), or err itself.
func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EACCES:
			return "EACCES"
		case syscall.EPERM:
			return "EPERM"
		case syscall.ENOENT:
			return "ENOENT"
		case syscall.EEXIST:
			return "EEXIST"
		}
		return "errno" + fmt.Sprint(int(errno))
	}
	return strings.ReplaceAll(err.Error(), " ", "_")
}

func write(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: write SRC DST...")
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	for _, dst := range args[1:] {
		if err := plant(dst, data); err != nil {
			fmt.Println(errnoName(err), dst)
		} else {
			fmt.Println("ok", dst)
		}
	}
	return nil
}

// plant writes data at dst every way a same-uid attacker would try.
func plant(dst string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(dst), fmt.Sprintf(".plant-%d", os.Getpid()))
	err := os.WriteFile(tmp, data, 0o600)
	if err == nil {
		if err = os.Rename(tmp, dst); err == nil {
			return nil
		}
		os.Remove(tmp)
	}
	f, cerr := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if cerr != nil {
		return errors.Join(err, cerr)
	}
	_, werr := f.Write(data)
	return errors.Join(werr, f.Close())
}

func forge(args []string) error {
	fl := flag.NewFlagSet("forge", flag.ContinueOnError)
	root := fl.String("root", "", "mailbox root")
	session := fl.String("session", "", "the inbox's session")
	watch := fl.Bool("watch", false, "forge for every request that appears")
	if err := fl.Parse(args); err != nil {
		return err
	}
	layout := mailbox.Layout{Root: *root}
	requests, err := layout.RequestsDir(*session)
	if err != nil {
		return err
	}
	responses, err := layout.ResponsesDir(*session)
	if err != nil {
		return err
	}
	one := func(id string) {
		fmt.Println(forgeOne(requests, responses, id), id)
	}
	if !*watch {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			if id := strings.TrimSpace(in.Text()); id != "" {
				one(id)
			}
		}
		return in.Err()
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	// requests/, and the staging directory the child writes its request
	// in before renaming it there: a request read while still staged is
	// forged for before the broker can see it.
	staging := layout.TempDir()
	for _, dir := range []string{requests, staging} {
		if err := w.Add(dir); err != nil {
			fmt.Println("watch:"+errnoName(err), "-")
			return nil
		}
	}
	fmt.Println("watching -")
	// Stdin closing ends the watch: the test's way to stop it.
	done := make(chan struct{})
	go func() {
		bufio.NewReader(os.Stdin).ReadString(0)
		close(done)
	}()
	var mu sync.Mutex
	forged := map[string]bool{}
	once := func(id string) {
		mu.Lock()
		defer mu.Unlock()
		if !forged[id] {
			forged[id] = true
			one(id)
		}
	}
	for {
		select {
		case <-done:
			return nil
		case ev := <-w.Events:
			if !ev.Has(fsnotify.Create) {
				continue
			}
			if filepath.Dir(ev.Name) == staging {
				go func() {
					if id := stagedRequest(ev.Name); id != "" {
						mu.Lock()
						defer mu.Unlock()
						if !forged[id] {
							forged[id] = true
							fmt.Println(forgeStaged(ev.Name, responses, id), id)
						}
					}
				}()
				continue
			}
			if name := filepath.Base(ev.Name); mailbox.IsMailName(name) {
				once(strings.TrimSuffix(name, ".json"))
			}
		case err := <-w.Errors:
			fmt.Fprintln(os.Stderr, "isolationprobe: watch:", err)
		}
	}
}

// stagedRequest reads a file being staged until it decodes as a request
// (the writer is still writing it at first), for up to 50 ms, and returns
// its id; "" when it is something else (a response, a heartbeat) or gone.
func stagedRequest(path string) string {
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
		data, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		if req, _, err := wire.DecodeRequest(data); err == nil {
			return req.ID
		}
		time.Sleep(200 * time.Microsecond)
	}
	return ""
}

// forgeStaged forges for request id from its staged file's bytes, which
// are the bytes the request will have.
func forgeStaged(staged, responses, id string) string {
	data, err := os.ReadFile(staged)
	if err != nil {
		// Renamed meanwhile: read it where it went.
		data, err = os.ReadFile(filepath.Join(filepath.Dir(responses), "requests", id+".json"))
	}
	if err != nil {
		return "read:" + errnoName(err)
	}
	return publishApproval(responses, id, data)
}

// forgeOne reads the request id, binds an approval to its bytes and
// publishes it over the answer path.
func forgeOne(requests, responses, id string) string {
	data, err := os.ReadFile(filepath.Join(requests, id+".json"))
	if err != nil {
		return "read:" + errnoName(err)
	}
	return publishApproval(responses, id, data)
}

// publishApproval writes an approval bound to request id with bytes data
// over its answer path.
func publishApproval(responses, id string, data []byte) string {
	resp := wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: "parent", RespondedAt: time.Now().UnixMilli()}
	out, err := wire.EncodeResponse(resp.Bind(id, wire.RequestDigest(data)))
	if err != nil {
		return "encode:" + errnoName(err)
	}
	if err := plant(filepath.Join(responses, id+".json"), out); err != nil {
		return "write:" + errnoName(err)
	}
	return "ok"
}

func upper(args []string) error {
	fl := flag.NewFlagSet("upper", flag.ContinueOnError)
	root := fl.String("root", "", "mailbox root")
	session := fl.String("session", "", "the session served")
	brokerUID := fl.Int("broker-uid", -1, "the isolation mode's broker uid (this process's)")
	group := fl.Int("group", -1, "the ask group")
	if err := fl.Parse(args); err != nil {
		return err
	}
	layout := mailbox.Layout{Root: *root}
	if *brokerUID >= 0 {
		layout.Isolation = &mailbox.Isolation{BrokerUID: *brokerUID, GID: *group}
	}
	if err := layout.EnsureInbox(*session); err != nil {
		return err
	}
	requests, err := layout.RequestsDir(*session)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		bufio.NewReader(os.Stdin).ReadString(0)
		cancel()
	}()
	hb := &mailbox.HeartbeatPublisher{Layout: layout, Session: *session, ResponseBinding: wire.BindingSHA256}
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		hb.Run(ctx, 0, func(err error) { fmt.Fprintln(os.Stderr, "isolationprobe: heartbeat:", err) })
	}()
	defer func() { cancel(); <-hbDone }()
	answered := map[string]bool{}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		entries, err := os.ReadDir(requests)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			id := strings.TrimSuffix(e.Name(), ".json")
			if !mailbox.IsMailName(e.Name()) || answered[id] {
				continue
			}
			data, err := mailbox.ReadFileOf(filepath.Join(requests, e.Name()), mailbox.AnyOwner)
			if err != nil {
				continue // gone, or being replaced: the next tick
			}
			resp := wire.Response{Approved: true, State: wire.StateApprovedForSession, ResponderSessionID: *session,
				RespondedAt: time.Now().UnixMilli(), SessionGrantWidth: wire.GrantProven,
				DecidedBy: provenance.User{Via: provenance.ViaDialog}}
			out, err := wire.EncodeResponse(resp.Bind(id, wire.RequestDigest(data)))
			if err != nil {
				return err
			}
			if err := layout.WriteResponse(*session, id, out); err != nil {
				return err
			}
			answered[id] = true
			fmt.Println("answered", id)
		}
	}
}
