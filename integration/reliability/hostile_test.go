package reliability

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/wire"
)

// hostileMailbox is point 3 (T6): a planter fills requests/ with FIFOs,
// sockets, devices, symlinks (to /dev/zero, outside the root, loops),
// hard links, empty, huge, over-the-cap and still-growing files,
// unreadable and foreign-owned files, odd names and directories, and
// deletes files mid-scan, while children keep asking. No read blocks
// longer than 10 ms, nothing outside the root is read, memory stays
// bounded, and every valid ask is answered.
func (s *suite) hostileMailbox(t *testing.T) {
	rounds := s.scale(3, 60)
	asks := s.scale(40, 600)
	r := s.newRig(t)
	r.keepInbox()
	outside := filepath.Join(r.base, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	b := r.broker(filepath.Join(r.base, "review.jsonl"))
	r.serving(b)
	requests := r.dir("requests")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		planted   atomic.Int64
		kinds     sync.Map // kind → count
		longest   atomic.Int64
		slowKind  atomic.Value
		planterWG sync.WaitGroup
		secretIDs []string
		closers   []func()
		closersMu sync.Mutex
	)
	plant := func(kind, path string) {
		planted.Add(1)
		v, _ := kinds.LoadOrStore(kind, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	secret := func(id string) string {
		// A valid request that lives outside the root: answering it
		// would prove it was read through a link.
		path := filepath.Join(outside, id+".json")
		if err := os.WriteFile(path, requestJSON(id, askAllow, 0), 0o600); err != nil {
			t.Error(err)
		}
		secretIDs = append(secretIDs, id)
		return path
	}

	planterWG.Add(1)
	go func() {
		defer planterWG.Done()
		for round := range rounds {
			if ctx.Err() != nil {
				return
			}
			p := func(name string) string { return filepath.Join(requests, fmt.Sprintf("perm-%s-%d.json", name, round)) }
			try := func(kind string, err error, path string) {
				if err != nil {
					t.Errorf("planting %s: %v", kind, err)
					return
				}
				plant(kind, path)
			}
			try("fifo", unix.Mkfifo(p("fifo"), 0o600), p("fifo"))
			if l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p("socket"), Net: "unix"}); err == nil {
				l.SetUnlinkOnClose(false)
				closersMu.Lock()
				closers = append(closers, func() { l.Close() })
				closersMu.Unlock()
				plant("socket", p("socket"))
			} else {
				t.Errorf("socket: %v", err)
			}
			if os.Geteuid() == 0 {
				try("char device", unix.Mknod(p("chardev"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 5))), p("chardev"))
			}
			try("symlink to /dev/zero", os.Symlink("/dev/zero", p("zero")), p("zero"))
			id := fmt.Sprintf("perm-secret-%d", round)
			try("symlink outside", os.Symlink(secret(id), filepath.Join(requests, id+".json")), filepath.Join(requests, id+".json"))
			try("symlink loop", errors.Join(os.Symlink(p("loop-b"), p("loop-a")), os.Symlink(p("loop-a"), p("loop-b"))), p("loop-a"))
			try("dangling symlink", os.Symlink(filepath.Join(outside, "nothing"), p("dangling")), p("dangling"))
			id = fmt.Sprintf("perm-hardlink-%d", round)
			try("hard link outside", os.Link(secret(id), filepath.Join(requests, id+".json")), filepath.Join(requests, id+".json"))
			try("empty", os.WriteFile(p("empty"), nil, 0o600), p("empty"))
			huge := p("huge")
			if f, err := os.Create(huge); err == nil {
				f.Truncate(1 << 40) // sparse: a terabyte nobody may read
				f.Close()
				plant("huge sparse", huge)
			}
			try("one byte over the cap", os.WriteFile(p("over"), make([]byte, mailbox.MaxFileSize+1), 0o600), p("over"))
			try("unreadable (mode 000)", os.WriteFile(p("mode000"), requestJSON("perm-mode000", askAllow, 0), 0o000), p("mode000"))
			if os.Geteuid() == 0 {
				// Made foreign beside the inbox and renamed in: written in
				// place, the file was root's for a moment, a valid ask
				// the broker could answer and remove before the chown.
				path := p("foreign")
				staged := filepath.Join(filepath.Dir(requests), filepath.Base(path)+".staged")
				err := os.WriteFile(staged, requestJSON(fmt.Sprintf("perm-foreign-%d", round), askAllow, 0), 0o600)
				if err == nil {
					err = os.Lchown(staged, 65534, 65534)
				}
				if err == nil {
					err = os.Rename(staged, path)
				}
				try("owned by another uid", err, path)
			}
			try("directory", os.Mkdir(p("dir"), 0o700), p("dir"))
			try("depth bomb", os.WriteFile(p("bomb"), []byte(strings.Repeat("[", 100000)), 0o600), p("bomb"))
			try("duplicate keys", os.WriteFile(p("dup"), []byte(`{"id":"x","ID":"y"}`), 0o600), p("dup"))
			try("id not its name", os.WriteFile(p("mismatch"), requestJSON("perm-other", askAllow, 0), 0o600), p("mismatch"))
			for _, odd := range []string{"new\nline", "bad\xffbyte", "sp ace", "co:lon", "a..b", strings.Repeat("L", 240)} {
				path := filepath.Join(requests, fmt.Sprintf("%s-%d.json", odd, round))
				try("odd name", os.WriteFile(path, requestJSON("perm-odd", askAllow, 0), 0o600), path)
			}
			// Still growing: written in place, never renamed, a valid
			// prefix and then more, for a while.
			planterWG.Add(1)
			go func() {
				defer planterWG.Done()
				path := p("growing")
				f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					t.Error(err)
					return
				}
				defer f.Close()
				plant("still growing", path)
				chunk := []byte(`{"id":"perm-growing","padding":"` + strings.Repeat("g", 4096))
				for i := 0; i < 100 && ctx.Err() == nil; i++ {
					if _, err := f.Write(chunk); err != nil {
						return
					}
					pause(2 * time.Millisecond)
				}
			}()
			// Deleted mid-scan: valid-looking files that vanish at once.
			for i := range 50 {
				path := p(fmt.Sprintf("flash%d", i))
				os.WriteFile(path, requestJSON(fmt.Sprintf("perm-flash%d-%d", i, round), askAllow, 0), 0o600)
				planted.Add(1)
				os.Remove(path)
			}
		}
	}()

	// Valid asks flow all along.
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
		slots   = make(chan struct{}, 8)
	)
	for i := range asks {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			a := r.ask(ctx, fmt.Sprintf("c%d", i), []string{askAllow, askDeny}[i%2])
			mu.Lock()
			answers = append(answers, a)
			mu.Unlock()
		}()
	}
	wg.Wait()
	planterWG.Wait()
	closersMu.Lock()
	for _, c := range closers {
		c()
	}
	closersMu.Unlock()
	// The broker has seen everything (a rescan a second at most).
	r.waitFor("the inbox emptied of plants", func() bool {
		names, _ := readNames(requests)
		for _, n := range names {
			if mailbox.IsMailName(n) && !strings.HasPrefix(n, "perm-dir-") {
				return false
			}
		}
		return true
	})
	// The broker's own read function on every kind of entry, each timed
	// best of three so that a descheduled test goroutine is not taken
	// for a blocked read; the broker's entries are consumed too fast to
	// time, so these are fresh ones in a scratch directory.
	var readCap time.Duration
	for range s.scale(1, 20) {
		d, kind, c := timeHostileReads(t, s.bin, filepath.Join(r.base, "scratch"), outside)
		if d.Nanoseconds() > longest.Load() {
			longest.Store(d.Nanoseconds())
			slowKind.Store(kind)
		}
		readCap = max(readCap, c)
	}
	alive := !b.exited()
	hwm := vmHWM(b.pid())
	b.stop(t)

	var lost []string
	var latencies []time.Duration
	for _, a := range answers {
		latencies = append(latencies, a.took)
		if !expected(a) {
			lost = append(lost, fmt.Sprintf("%q exit %d: %+v %s", a.value, a.code, a.out, a.stderr))
		}
	}
	slices.Sort(latencies)
	var readOutside []string
	for _, id := range secretIDs {
		path, _ := r.layout.ResponsePath("parent", id)
		if _, err := os.Lstat(path); err == nil {
			readOutside = append(readOutside, id)
		}
		if _, err := os.Stat(filepath.Join(outside, id+".json")); err != nil {
			readOutside = append(readOutside, id+" (the target was touched)")
		}
	}
	var kindList []string
	kinds.Range(func(k, v any) bool {
		kindList = append(kindList, k.(string))
		return true
	})
	slow, _ := slowKind.Load().(string)
	figures(t, "planted", planted.Load(), "kinds", len(kindList), "asks", len(answers), "lost", len(lost),
		"read_outside_root", len(readOutside), "longest_blocked_read", ms(time.Duration(longest.Load())), "slowest_kind", fmt.Sprintf("%q", slow), "read_of_1MiB", ms(readCap),
		"ask_p50", ms(percentile(latencies, 0.5)), "ask_p99", ms(percentile(latencies, 0.99)), "ask_max", ms(percentile(latencies, 1)),
		"broker_peak_rss_kib", hwm)
	if !alive {
		t.Errorf("the broker died: %s", b.stderr)
	}
	if len(lost) > 0 {
		t.Errorf("%d valid asks not answered right, e.g. %s", len(lost), lost[0])
	}
	if len(readOutside) > 0 {
		t.Errorf("read outside the root: %v", readOutside)
	}
	if d := time.Duration(longest.Load()); d > 10*time.Millisecond {
		t.Errorf("a read of a %q blocked %s", slow, d)
	}
	if hwm > 256<<10 {
		t.Errorf("broker peak RSS %d KiB", hwm)
	}
}

// otherUsers is point 4 (T8): with root, a request owned by another uid is
// refused, a tree not owned by the broker's user is refused at startup,
// and another user cannot list, read or plant under the 0700 root. Without
// root only the group/world-writable refusals run.
func (s *suite) otherUsers(t *testing.T) {
	checks := 0
	refuse := func(what, wantErr string, prepare func(root string) func()) {
		t.Helper()
		r := s.newRig(t)
		r.keepInbox()
		undo := prepare(r.root)
		cmd := exec.Command(filepath.Join(s.bin, "broker"), "serve", "--session", "parent", "--root", r.root, "--config", r.config, "--log", "-")
		cmd.Env = cleanEnv()
		out, err := cmd.CombinedOutput()
		undo()
		checks++
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "refusing to serve") || !strings.Contains(string(out), wantErr) {
			t.Errorf("%s: the broker did not refuse with %q: %v\n%s", what, wantErr, err, out)
		}
	}
	chmod := func(rel string, mode os.FileMode) func(string) func() {
		return func(root string) func() {
			path := filepath.Join(root, rel)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			return func() { os.Chmod(path, fi.Mode().Perm()) }
		}
	}
	refuse("group-writable root", "writable by group or others", chmod("", 0o770))
	refuse("world-writable requests/", "writable by group or others", chmod("sessions/parent/requests", 0o703))
	refuse("sticky world-writable serving/", "writable by group or others", func(root string) func() {
		os.MkdirAll(filepath.Join(root, "serving"), 0o700)
		return chmod("serving", 0o1777)(root)
	})
	if os.Geteuid() != 0 {
		figures(t, "startup_refusals", checks, "foreign_files_refused", "skipped (not root)")
		return
	}
	chown := func(rel string) func(string) func() {
		return func(root string) func() {
			path := filepath.Join(root, rel)
			if err := os.Lchown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			return func() { os.Lchown(path, 0, 0) }
		}
	}
	refuse("root owned by nobody", "owned by another user", chown(""))
	refuse("session directory owned by nobody", "owned by another user", chown("sessions/parent"))

	// A request owned by another uid is refused and never answered; the
	// one beside it, ours, is.
	r := s.newRig(t)
	r.keepInbox()
	b := r.broker(filepath.Join(r.base, "review.jsonl"))
	r.serving(b)
	foreign := filepath.Join(r.base, "perm-foreign.json")
	if err := os.WriteFile(foreign, requestJSON("perm-foreign", askAllow, 0), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(foreign, filepath.Join(r.dir("requests"), "perm-foreign.json")); err != nil {
		t.Fatal(err)
	}
	r.writeRequest("perm-ours", askAllow, 0)
	r.waitFor("both requests handled", func() bool { return countMail(r.dir("requests")) == 0 })
	foreignAnswered := 0
	if _, err := os.Lstat(filepath.Join(r.dir("responses"), "perm-foreign.json")); err == nil {
		foreignAnswered++
		t.Error("a request owned by another uid was answered")
	}
	if _, err := os.Lstat(filepath.Join(r.dir("responses"), "perm-ours.json")); err != nil {
		t.Errorf("our own request was not answered: %v\n%s", err, b.stderr)
	}

	// The child refuses an answer owned by another uid, and takes the
	// broker's own answer written over it.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	plantedForeign := make(chan error, 1)
	go func() { plantedForeign <- plantOnRequest(ctx, r, foreignApproval) }()
	a := r.ask(ctx, "c1", askDeny)
	cancel()
	if err := <-plantedForeign; err != nil {
		t.Error(err)
	}
	// The broker's deny, or (when the plant landed after the broker's
	// answer and replaced it) a refusal: unavailable. Never the approval.
	foreignTaken := 0
	if a.out.Approved || !(expected(a) || a.reason() == "The parent session's permission response could not be read") {
		foreignTaken++
		t.Errorf("the child took an answer owned by another uid: exit %d %+v %s", a.code, a.out, a.stderr)
	}

	// Another user can neither list, nor read, nor plant under the root.
	denied := 0
	for _, sh := range []string{
		"ls " + r.root,
		"ls " + r.dir("requests"),
		"cat " + filepath.Join(r.root, "serving", "parent.json"),
		"echo '{}' > " + filepath.Join(r.dir("responses"), "perm-x.json"),
		"ln -s /dev/zero " + filepath.Join(r.dir("requests"), "perm-y.json"),
		"mkfifo " + filepath.Join(r.dir("requests"), "perm-z.json"),
	} {
		cmd := exec.Command("sh", "-c", sh)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "ermission denied") {
			t.Errorf("as nobody, %q: %v %s", sh, err, out)
		} else {
			denied++
		}
	}
	b.stop(t) // after which its stderr is all copied
	if !b.stderr.Contains("owned by another user") {
		t.Errorf("the refusal was not reported:\n%s", b.stderr)
	}
	figures(t, "startup_refusals", checks, "foreign_requests_answered", foreignAnswered, "foreign_answer_taken", foreignTaken,
		"other_uid_attempts_denied", fmt.Sprintf("%d/6", denied))
}

// foreignApproval writes an approval owned by another uid.
func foreignApproval(r *rig, id string) error {
	data, _ := wire.EncodeResponse(wire.Response{Approved: true, State: wire.StateApproved, ResponderSessionID: "parent", RespondedAt: 1})
	tmp := filepath.Join(r.base, id+".forged")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(r.dir("responses"), id+".json"))
}

// plantOnRequest waits for the next request in the inbox and plants a
// response for it with plant, before the broker can answer if it wins the
// race (the broker's answer must win either way).
func plantOnRequest(ctx context.Context, r *rig, plant func(r *rig, id string) error) error {
	seen := map[string]bool{}
	names, _ := readNames(r.dir("requests"))
	for _, n := range names {
		seen[n] = true
	}
	tick := time.NewTicker(100 * time.Microsecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		names, _ := readNames(r.dir("requests"))
		for _, n := range names {
			if seen[n] || !mailbox.IsMailName(n) {
				continue
			}
			return plant(r, strings.TrimSuffix(n, ".json"))
		}
	}
}

// timeHostileReads plants one entry of each hostile kind in dir and has
// readprobe time mailbox.ReadFile on each (best of three), while a writer
// keeps growing one of them. It returns the longest read of an entry that
// could block (all but the plain files at the cap) and its name, and the
// longest read of a plain file at the cap (copying a MiB: CPU, not a wait).
func timeHostileReads(t *testing.T, bin, dir, outside string) (blocked time.Duration, slowest string, copying time.Duration) {
	t.Helper()
	os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	p := func(name string) string { return filepath.Join(dir, name+".json") }
	secret := filepath.Join(outside, "scratch-secret.json")
	os.WriteFile(secret, requestJSON("perm-scratch", askAllow, 0), 0o600)
	unix.Mkfifo(p("fifo"), 0o600)
	if l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p("socket"), Net: "unix"}); err == nil {
		defer l.Close()
	}
	if os.Geteuid() == 0 {
		unix.Mknod(p("chardev"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 5)))
	}
	os.Symlink("/dev/zero", p("zero"))
	os.Symlink(secret, p("outside"))
	os.Symlink(p("loop-b"), p("loop-a"))
	os.Symlink(p("loop-a"), p("loop-b"))
	os.Link(secret, p("hardlink"))
	os.WriteFile(p("empty"), nil, 0o600)
	if f, err := os.Create(p("huge")); err == nil {
		f.Truncate(1 << 40)
		f.Close()
	}
	os.WriteFile(p("over"), make([]byte, mailbox.MaxFileSize+1), 0o600)
	os.WriteFile(p("cap"), make([]byte, mailbox.MaxFileSize), 0o600)
	os.WriteFile(p("mode000"), []byte("{}"), 0o000)
	os.WriteFile(p("bomb"), []byte(strings.Repeat("[", 100000)), 0o600)
	os.Mkdir(p("dir"), 0o700)
	// A file still being written by another process's open descriptor.
	grow, err := os.OpenFile(p("growing"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer grow.Close()
	stop := make(chan struct{})
	var growing sync.WaitGroup
	growing.Add(1)
	go func() {
		defer growing.Done()
		chunk := make([]byte, 64<<10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := grow.Write(chunk); err != nil {
				return
			}
			if fi, _ := grow.Stat(); fi != nil && fi.Size() > 4*mailbox.MaxFileSize {
				grow.Truncate(0)
				grow.Seek(0, 0)
			}
		}
	}()
	defer func() { close(stop); growing.Wait() }()

	out, err := exec.Command(filepath.Join(bin, "readprobe"), dir).Output()
	if err != nil {
		t.Fatalf("readprobe: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var ns int64
		var name string
		if _, err := fmt.Sscan(line, &ns, &name); err != nil {
			t.Fatalf("readprobe said %q: %v", line, err)
		}
		switch d := time.Duration(ns); {
		case name == "cap.json" || name == "growing.json":
			// Regular files of up to the cap are read whole: CPU time,
			// not a wait.
			copying = max(copying, d)
		case d > blocked:
			blocked, slowest = d, name
		}
	}
	return blocked, slowest, copying
}
