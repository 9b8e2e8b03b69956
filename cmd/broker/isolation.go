package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/seed6639df8c/courier/grants"
	"github.com/seed6639df8c/courier/mailbox"
)

// isolationUsage is broker serve's help on the isolation mode.
const isolationUsage = `
The broker as its own user (--ask-group GROUP): a subagent, or a plugin,
running as the operator's user can write answers into a mailbox of its own
user; run the broker as a user of its own and no child can (see
docs/THREAT-MODEL.md for what each deployment guarantees). As root, once:

  groupadd courier-ask                        # the ask group
  useradd --system --no-create-home courier   # the broker's user
  usermod -aG courier-ask courier             # the broker is in the group
  usermod -aG courier-ask alice               # each user whose agents ask
  install -d -o courier -g courier-ask -m 0750 /var/lib/courier/mailbox
  install -d -o courier -m 0700 /var/log/courier   # its review log

Then the broker, as its user (sudo -u courier broker serve ...):

  broker serve --session ID --ask-group courier-ask \
    --root /var/lib/courier/mailbox --log /var/log/courier/review.jsonl

and each child as its own user, with the same root and the broker's user
(--broker-user courier, or COURIER_BROKER_USER=courier; without either a
child refuses a root another user owns):

  child ask --root /var/lib/courier/mailbox --broker-user courier ...

The root must be outside every home directory (a home is 0700: the
children could not reach it) and every directory above it searchable by
the group's members. The broker gives the tree its user and the ask group:
requests/ and tmp/ 1730 (members create requests, list nothing), the rest
0750; only the broker's user writes responses, heartbeats and the grants
it vouches for a child ("this subagent only", under courier/vouched/<uid>),
and a child refuses any of them another user owns. Each request's owner
uid is the requester the broker vouches for: the prompt and the review log
(requesterUid) show it, and agents.<name>.users in the config lists the
uids whose agent name is believed (the overrides of an agent not vouched
for can only make an answer stricter).
`

// isolation resolves --ask-group (a group name or numeric gid) into the
// isolation mode of the broker's user. The broker's user must be in the
// group (or be root): it gives the tree that group.
func isolation(spec string) (*mailbox.Isolation, string, error) {
	gid, name, err := lookupGroup(spec)
	if err != nil {
		return nil, "", err
	}
	euid := os.Geteuid()
	groups, err := os.Getgroups()
	if err != nil {
		return nil, "", fmt.Errorf("--ask-group %s: listing the broker's groups: %w", spec, err)
	}
	if err := checkMember(spec, name, gid, euid, os.Getegid(), groups); err != nil {
		return nil, "", err
	}
	return &mailbox.Isolation{BrokerUID: euid, GID: gid}, name, nil
}

// checkMember refuses an ask group the broker's user (euid, in egid and
// groups) is not in, unless it is root: it could not give the tree that
// group.
func checkMember(spec, name string, gid, euid, egid int, groups []int) error {
	if euid == 0 || gid == egid || slices.Contains(groups, gid) {
		return nil
	}
	return fmt.Errorf("--ask-group %s: the broker's user (%s) is not a member of group %s (gid %d), so it cannot give the mailbox that group: add it (usermod -aG %s %s) and start the broker in a new login, or name a group it is in",
		spec, describeUser(euid), name, gid, name, userName(euid))
}

// lookupGroup resolves a group name or numeric gid, returning the gid and
// the name to show.
func lookupGroup(spec string) (int, string, error) {
	if spec == "" {
		return 0, "", errors.New("--ask-group: expected a group name or a numeric gid")
	}
	if n, err := strconv.Atoi(spec); err == nil {
		if n < 0 {
			return 0, "", fmt.Errorf("--ask-group %s: expected a group name or a gid of 0 or more", spec)
		}
		if g, err := user.LookupGroupId(spec); err == nil {
			return n, g.Name, nil
		}
		return n, spec, nil
	}
	g, err := user.LookupGroup(spec)
	if err != nil {
		return 0, "", fmt.Errorf("--ask-group %s: %w (create it with groupadd %s, or give a numeric gid)", spec, err, spec)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, "", fmt.Errorf("--ask-group %s: gid %q is not a number", spec, g.Gid)
	}
	return gid, g.Name, nil
}

// describeUser is "uid N (name)", or "uid N" when no name resolves.
func describeUser(uid int) string {
	if name := userName(uid); name != strconv.Itoa(uid) {
		return fmt.Sprintf("uid %d (%s)", uid, name)
	}
	return fmt.Sprintf("uid %d", uid)
}

// userName is uid's login name, or the number when none resolves.
func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return u.Username
	}
	return strconv.Itoa(uid)
}

// warnUnreachableRoot says on stderr which directory above the root keeps
// the ask group's members out (no search permission for them): children
// would find no broker serving, with nothing else to say why.
func warnUnreachableRoot(root string, gid int, stderr io.Writer) {
	for dir := filepath.Dir(root); ; dir = filepath.Dir(dir) {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err == nil {
			reachable := st.Mode&0o001 != 0 || int(st.Gid) == gid && st.Mode&0o010 != 0
			if !reachable {
				fmt.Fprintf(stderr, "broker: warning: the ask group's members cannot reach the mailbox root %s: %s (mode %04o, uid %d, gid %d) is not searchable by them; chmod o+x %s, or choose a root outside every home directory (e.g. /var/lib/courier/mailbox)\n",
					root, dir, st.Mode&0o7777, st.Uid, st.Gid, dir)
				return
			}
		}
		if dir == filepath.Dir(dir) {
			return
		}
	}
}

// openVouched opens the vouched journal of uidSpec's child session for
// broker grants (--vouched-uid): the tree's owner is the broker's user
// and its group the ask group, as broker serve --ask-group left them. A
// revoke rewrites the journal, so it runs as the broker's user: a journal
// another user wrote would be refused by the children.
func openVouched(root, uidSpec, session string, write bool) (*grants.Journal, error) {
	uid, err := lookupUID(uidSpec)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Stat(root, &st); err != nil {
		return nil, fmt.Errorf("--vouched-uid: the mailbox root %s: %w (is it the root broker serve --ask-group serves?)", root, err)
	}
	if euid := os.Geteuid(); write && euid != int(st.Uid) {
		return nil, fmt.Errorf("--vouched-uid: the mailbox root %s is owned by %s, the broker's user, not by %s: revoke as that user (sudo -u %s broker grants revoke ...)",
			root, describeUser(int(st.Uid)), describeUser(euid), userName(int(st.Uid)))
	}
	layout := mailbox.Layout{Root: root, Isolation: &mailbox.Isolation{BrokerUID: int(st.Uid), GID: int(st.Gid)}}
	return grants.OpenVouched(layout, uid, session)
}

// lookupUID resolves a uid or a user name.
func lookupUID(spec string) (int, error) {
	if n, err := strconv.Atoi(spec); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("--vouched-uid %s: expected a uid of 0 or more, or a user name", spec)
		}
		return n, nil
	}
	u, err := user.Lookup(spec)
	if err != nil {
		return 0, fmt.Errorf("--vouched-uid %s: %w", spec, err)
	}
	return strconv.Atoi(u.Uid)
}
