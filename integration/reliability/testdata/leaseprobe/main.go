// Command leaseprobe is the isolation review's lease attack
// (integration/reliability, isolation_review_test.go): as a member of the
// ask group it creates request files and holds a write lease on each
// (fcntl F_SETLEASE, which a file's owner may take), so that every other
// process's open of them fails with EWOULDBLOCK when non-blocking, and
// takes each lease again whenever the kernel breaks it.
//
//	leaseprobe DIR N
//	    creates DIR/perm-leased-<i>.json for i < N (mode 0644), leases
//	    each, prints "leased N", and keeps the leases until stdin closes.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) != 3 {
		fail("usage: leaseprobe DIR N")
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fail(err.Error())
	}
	// The lease break is announced with SIGIO; ignored, the kernel takes
	// the lease away after lease-break-time and it is taken again.
	signal.Ignore(syscall.SIGIO)
	fds := make([]int, n)
	for i := range fds {
		path := filepath.Join(os.Args[1], "perm-leased-"+strconv.Itoa(i)+".json")
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err != nil {
			fail(err.Error())
		}
		if err := unix.Fchmod(fd, 0o644); err != nil {
			fail(err.Error())
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
			fail("F_SETLEASE " + path + ": " + err.Error())
		}
		fds[i] = fd
	}
	fmt.Println("leased", n)
	done := make(chan struct{})
	go func() {
		bufio.NewReader(os.Stdin).ReadString(0)
		close(done)
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		for _, fd := range fds {
			if l, err := unix.FcntlInt(uintptr(fd), unix.F_GETLEASE, 0); err == nil && l == unix.F_UNLCK {
				unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK)
			}
		}
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "leaseprobe:", msg)
	os.Exit(2)
}
