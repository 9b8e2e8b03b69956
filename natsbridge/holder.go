package natsbridge

import (
	"fmt"
	"strconv"
	"strings"
)

// Holder is how a broker describes itself in the session's lease
// (Bridge.Holder), and which leases it may take over as its earlier run's
// (Bridge.EarlierRun): exactly "broker pid N on HOST, root ROOT" with this
// host and root and any pid, this one's too (a broker restarted in a
// container is pid 1 again). The host and root (the path and, where the
// system has them, the directory's device and inode: dirIdentity)
// identify the broker across its runs, and the serving lock this run
// holds proves that an earlier run under them ended (Bridge.EarlierRun).
// The inode tells apart two containers that share the host's name (host
// networking) and mount their own volumes at the same path.
func Holder(pid int, host, root string) (desc string, earlierRun func(holder string) bool) {
	return holderOf(pid, host, root+dirIdentity(root))
}

// holderOf is Holder with the root already described (its path and
// dirIdentity). The description is parsed whole, not matched by its end:
// a root path of another broker that ends in " on HOST, root ROOT" must
// not make its live lease look like ours.
func holderOf(pid int, host, root string) (string, func(string) bool) {
	same := fmt.Sprintf(" on %s, root %s", host, root)
	earlier := func(holder string) bool {
		rest, ok := strings.CutPrefix(holder, "broker pid ")
		if !ok {
			return false
		}
		digits, ok := strings.CutSuffix(rest, same)
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			return false
		}
		n, err := strconv.Atoi(digits)
		return err == nil && n > 0 && strconv.Itoa(n) == digits
	}
	return fmt.Sprintf("broker pid %d%s", pid, same), earlier
}
