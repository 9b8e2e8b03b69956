// Command inotifyhog takes every inotify instance its user may have
// (fs.inotify.max_user_instances, 128 by default), prints how many it
// took, and holds them until its stdin closes. The reliability tests run
// it as another user, so that a broker and children of that user find
// inotify exhausted and must fall back to polling.
package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

func main() {
	n := 0
	for {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			break
		}
		_ = fd // held until exit
		n++
	}
	fmt.Println(n)
	io.Copy(io.Discard, os.Stdin)
}
