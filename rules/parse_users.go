package rules

import (
	"errors"
	"fmt"
	"math"
	"os/user"
	"strconv"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// maxUID is the largest uid a users entry may name: uid_t is 32 bits,
// and its all-ones value is (uid_t)-1, which means "no uid" to chown and
// setreuid, never a user.
const maxUID = math.MaxUint32 - 1

// usersExpected is the message of a users list, or an entry of it, that
// is not what the list holds.
const usersExpected = `expected an array of user names or numeric uids, such as ["alice", 61002]`

// users reads `agents.<name>.users`, the array v, into uids. A name is
// resolved with os/user here, when the config is read, so that an
// unknown name is refused with its place rather than vouching for no one
// at the first ask; a string of digits is a uid, as a JSON number is, and
// is not looked up, since a uid needs no passwd entry to own a file.
// Any bad entry fails the list (ok false) after every entry is reported.
func (p *parser) users(path string, v strictjson.Value) (uids []int, ok bool) {
	if v.Kind() != strictjson.KindArray {
		p.fail(v.Offset(), path, usersExpected+", got "+describe(v))
		p.skip(path, v)
		return nil, false
	}
	ok = true
	uids = []int{}
	items := v.Items()
	for i := 0; items.Next(); i++ {
		ip := fmt.Sprintf("%s[%d]", path, i)
		item := items.Value()
		p.skip(ip, item)
		uid, err := userEntry(item)
		if err != nil {
			p.fail(item.Offset(), ip, err.Error())
			ok = false
			continue
		}
		uids = append(uids, uid)
	}
	if !ok {
		return nil, false
	}
	return uids, true
}

// userEntry resolves one users entry to a uid; the error is the message.
func userEntry(v strictjson.Value) (int, error) {
	switch v.Kind() {
	case strictjson.KindNumber:
		f, err := strconv.ParseFloat(string(v.Raw()), 64)
		if err != nil || f != math.Trunc(f) || f < 0 || f > maxUID {
			return 0, fmt.Errorf("expected a uid, an integer from 0 to %d, got %s", maxUID, describe(v))
		}
		return int(f), nil
	case strictjson.KindString:
		s, _ := stringOf(v)
		if s == "" {
			return 0, errors.New("empty user name")
		}
		if isDecimal(s) {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil || n > maxUID {
				return 0, fmt.Errorf("expected a uid, an integer from 0 to %d, got %s", maxUID, describeString(s))
			}
			return int(n), nil
		}
		u, err := user.Lookup(s)
		if err != nil {
			var unknown user.UnknownUserError
			if errors.As(err, &unknown) {
				return 0, fmt.Errorf("unknown user %s: no such user on this machine (write its numeric uid to vouch for a uid without a passwd entry)", describeString(s))
			}
			return 0, fmt.Errorf("user %s: looking it up: %v", describeString(s), err)
		}
		uid, err := strconv.Atoi(u.Uid)
		if err != nil || uid < 0 || uid > maxUID {
			return 0, fmt.Errorf("user %s: its uid %q is not a number courier can match", describeString(s), u.Uid)
		}
		return uid, nil
	}
	return 0, errors.New(usersExpected + ", got " + describe(v))
}

// isDecimal reports whether s is made of ASCII digits only.
func isDecimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
