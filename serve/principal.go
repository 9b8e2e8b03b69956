package serve

import (
	"os/user"
	"strconv"
	"sync"

	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
	"github.com/seed6639df8c/courier/wire"
)

// NoUID is the requester uid where the transport vouches for none: the
// same-uid mode, where every request file is the broker's own user's.
const NoUID = -1

// from is who asked, as far as the broker can vouch for it, kept with a
// request from its read to its answer (issue 18): the uid that owns the
// request file in the isolation mode, the principal the transport gives,
// and how far the rules believed the agent name the child claims.
type from struct {
	// uid is the request file's owner in the isolation mode; NoUID in
	// the same-uid mode, where it says nothing (every file is the
	// broker's user's).
	uid int
	// trust is how far the rules believed the request's agent name for
	// its overrides, once they resolved it; "" before, or when the
	// rules were not consulted.
	trust rules.AgentTrust
}

// sameUID is the from of every request in the same-uid mode.
var sameUID = from{uid: NoUID}

// query is q with the requester the transport vouches for: the rules
// believe an agent's overrides only for the uids the operator listed.
func (f from) query(q rules.Query) rules.Query {
	if f.uid >= 0 {
		q.Isolated, q.UID = true, f.uid
	}
	return q
}

// key is whose turn f's request takes and whose bounds it counts in
// (requesterKey), scoped by scope.
func (f from) key(req *wire.Request) string { return f.scope(requesterKey(req)) }

// scope is a requester key within f's uid in the isolation mode, so that
// another member of the ask group claiming a session id neither uses up
// that session's bound nor shares its turns; the key as it is in the
// same-uid mode, where every request is one uid's.
func (f from) scope(key string) string {
	if f.uid < 0 {
		return key
	}
	return "uid:" + strconv.Itoa(f.uid) + "/" + key
}

// parties is p with what the broker knows of the requester beyond what
// it claims: its uid (isolation mode) and, once the rules resolved it, how
// far its agent name was believed (none said when no agent overrides were
// concerned).
func (f from) parties(p reviewlog.Parties) reviewlog.Parties {
	if f.uid >= 0 {
		uid := f.uid
		p.RequesterUID = &uid
	}
	if f.trust != "" && f.trust != rules.AgentNoOverrides {
		p.AgentTrust = string(f.trust)
	}
	return p
}

// userNames caches uid → login name for the prompt's "from" line: a
// lookup may read /etc/passwd or ask NSS, once per uid is enough, and the
// uids that own request files are the local users of the ask group.
type userNames struct {
	mu    sync.Mutex
	names map[int]string
}

// maxUserNames bounds the cache: beyond it names are looked up each time.
const maxUserNames = 4096

// name is uid's login name, "" when none resolves.
func (u *userNames) name(uid int) string {
	if uid < 0 {
		return ""
	}
	u.mu.Lock()
	name, ok := u.names[uid]
	u.mu.Unlock()
	if ok {
		return name
	}
	if found, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = found.Username
	}
	u.mu.Lock()
	if u.names == nil {
		u.names = make(map[int]string)
	}
	if len(u.names) < maxUserNames {
		u.names[uid] = name
	}
	u.mu.Unlock()
	return name
}
