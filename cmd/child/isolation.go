package main

import (
	"flag"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/seed6639df8c/courier/mailbox"
)

// envBrokerUser names the broker's user when no --broker-user is given.
const envBrokerUser = "COURIER_BROKER_USER"

// brokerUserHelp is the help of --broker-user, shared by ask, hook and
// grants.
const brokerUserHelp = "the broker's user (a name or a uid) when the broker runs as a user of its own " +
	"(the isolation mode: broker serve --ask-group; docs/THREAT-MODEL.md): answers, heartbeats and grants are " +
	"taken only from that user, and a mailbox root another user owns is refused; " +
	"default $" + envBrokerUser + "; without either, the same-uid mode: a root of this user (a root another user owns is refused, never taken as that user's broker)"

// brokerUserFlag declares --broker-user into fs.
func brokerUserFlag(fs *flag.FlagSet, dst *string) {
	fs.StringVar(dst, "broker-user", "", brokerUserHelp)
}

// brokerUserSetting is the broker's user as given: the flag, else the
// environment (the flag wins), and where it came from, for errors.
func brokerUserSetting(flagValue string, getenv func(string) string) (value, source string) {
	if flagValue != "" {
		return flagValue, "--broker-user"
	}
	return getenv(envBrokerUser), "$" + envBrokerUser
}

// lookupUID resolves a user name or a numeric uid (taken as it is).
func lookupUID(name string) (int, error) {
	if uid, err := strconv.Atoi(name); err == nil {
		if uid < 0 {
			return 0, fmt.Errorf("uid %d: expected a user name or a uid of 0 or more", uid)
		}
		return uid, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, fmt.Errorf("no user %q on this system (give the broker's user name or its numeric uid): %w", name, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return 0, fmt.Errorf("user %q has uid %q, which is not a number", name, u.Uid)
	}
	return uid, nil
}

// resolveLayout is the mailbox at root as this child must read it: the
// isolation mode when the broker runs as another user (--broker-user,
// given as flagValue, else $COURIER_BROKER_USER), the same-uid mode
// otherwise, where a root another user owns is refused: a child never
// takes a root's owner as its broker unless told to. The error,
// for a user that does not resolve or a root the broker's user does not
// own, names the root, the owner found and the one expected.
func resolveLayout(root, flagValue string, getenv func(string) string) (mailbox.Layout, error) {
	brokerUser, source := brokerUserSetting(flagValue, getenv)
	if brokerUser == "" {
		iso, err := mailbox.DetectIsolation(root, -1)
		if err != nil {
			return mailbox.Layout{}, err
		}
		return mailbox.Layout{Root: root, Isolation: iso}, nil
	}
	uid, err := lookupUID(brokerUser)
	if err != nil {
		return mailbox.Layout{}, fmt.Errorf("%s %q: %w", source, brokerUser, err)
	}
	euid := os.Geteuid()
	if uid != euid {
		iso, err := mailbox.DetectIsolation(root, uid)
		if err != nil {
			return mailbox.Layout{}, fmt.Errorf("%s %q (uid %d): %w", source, brokerUser, uid, err)
		}
		return mailbox.Layout{Root: root, Isolation: iso}, nil
	}
	// The broker as this very user is the same-uid mode: the root must
	// be this user's (or missing, to be created as pi's children do).
	if _, err := mailbox.DetectIsolation(root, -1); err != nil {
		return mailbox.Layout{}, fmt.Errorf("%s %q (uid %d, this process's own): %w", source, brokerUser, uid, err)
	}
	return mailbox.Layout{Root: root}, nil
}
