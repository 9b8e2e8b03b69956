package mailbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed6639df8c/courier/wire"
)

// EnvAgentDir names the environment variable that moves pi's agent
// directory, and with it the forwarding root.
const EnvAgentDir = "PI_CODING_AGENT_DIR"

// Directory and file names of the mailbox tree. They are pi's, fixed by the
// wire: changing one strands every pi peer.
const (
	sessionsDirName  = "sessions"
	servingDirName   = "serving"
	requestsDirName  = "requests"
	responsesDirName = "responses"
	// tempDirName is courier's own: requests and responses are written
	// here as unnamed files and linked into place (0032), other files
	// staged here by renameio and renamed, outside every watched
	// directory, so a watcher sees one Create per published file. pi
	// ignores it.
	tempDirName = "tmp"
	// stateDirName holds courier's own state (grant journals); pi ignores it.
	stateDirName = "courier"
	jsonExt      = ".json"
)

// ResolveRoot returns the absolute forwarding root. An explicit root (the
// --root flag) wins; otherwise it is pi's agent directory
// ($PI_CODING_AGENT_DIR, a leading "~" expanded as pi's getAgentDir does, or
// ~/.pi/agent) joined with sessions/permission-forwarding. The result is
// absolute so that every path derived from it survives a later chdir.
func ResolveRoot(explicit string) (string, error) {
	if explicit != "" {
		root, err := filepath.Abs(explicit)
		if err != nil {
			return "", fmt.Errorf("resolve mailbox root %q: %w", explicit, err)
		}
		return root, nil
	}
	agentDir, err := agentDir()
	if err != nil {
		return "", err
	}
	root, err := filepath.Abs(filepath.Join(agentDir, "sessions", "permission-forwarding"))
	if err != nil {
		return "", fmt.Errorf("resolve mailbox root under %q: %w", agentDir, err)
	}
	return root, nil
}

// ErrNoRoot is wrapped by PrepareRoot and CheckRoot when a mailbox root
// does not exist where courier may not create it.
var ErrNoRoot = errors.New("the mailbox root does not exist")

// Where a missing root is created. pi's own root, the one ResolveRoot("")
// names under the agent directory, is created with its parents, as pi's
// children create it (mkdir -p). A root the operator named (--root) is
// theirs: the broker about to serve it creates it only when its parent
// directory exists, so a mistyped path fails, naming itself, instead of
// growing a tree nobody else looks in; a child never creates it, since no
// broker serves a root that does not exist.

// PrepareRoot makes sure the root exists before a broker serves it, by the
// rules above; the error for a root it may not create wraps ErrNoRoot and
// names the path and its missing parent.
func (l Layout) PrepareRoot() error {
	fi, err := os.Stat(l.Root)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("mailbox root %s: exists and is not a directory", l.Root)
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("mailbox root: %w", err)
	case isDefaultRoot(l.Root):
		return mkdirAllPrivate(l.Root)
	}
	parent := filepath.Dir(l.Root)
	if pfi, err := os.Stat(parent); err != nil || !pfi.IsDir() {
		return fmt.Errorf("%w: %s, and its parent %s is not a directory either: a --root is created only inside an existing directory (check the path, or create it first)", ErrNoRoot, l.Root, parent)
	}
	return mkdirPrivate(l.Root)
}

// CheckRoot is a child's look before it asks: nil when the root exists or
// is pi's own (created as a pi child creates it); otherwise an error
// wrapping ErrNoRoot that names the path looked in.
func (l Layout) CheckRoot() error {
	fi, err := os.Stat(l.Root)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("mailbox root %s: exists and is not a directory", l.Root)
	case errors.Is(err, os.ErrNotExist) && isDefaultRoot(l.Root):
		return nil
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: looked in %s, so no broker serves there (a broker creates its --root when it starts; check the path)", ErrNoRoot, l.Root)
	}
	return fmt.Errorf("mailbox root: %w", err)
}

// isDefaultRoot reports whether root is pi's own root, the one
// ResolveRoot("") names.
func isDefaultRoot(root string) bool {
	def, err := ResolveRoot("")
	return err == nil && filepath.Clean(root) == def
}

// AgentDir is pi's agent directory: $PI_CODING_AGENT_DIR (a leading "~"
// expanded), else ~/.pi/agent. courier's default review log lives under it.
func AgentDir() (string, error) { return agentDir() }

func agentDir() (string, error) {
	dir := os.Getenv(EnvAgentDir)
	if dir != "" && dir != "~" && !strings.HasPrefix(dir, "~/") {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locate pi agent directory: %w", err)
	}
	switch {
	case dir == "":
		return filepath.Join(home, ".pi", "agent"), nil
	case dir == "~":
		return home, nil
	}
	return filepath.Join(home, dir[2:]), nil
}

// Layout names every path of one forwarding root. Each method that takes a
// session id escapes it (see EscapeSessionID) and each that takes a request
// id validates it (see ValidateID), so a hostile id can never name a path
// outside the tree.
type Layout struct {
	// Root is the forwarding root, normally from ResolveRoot.
	Root string
	// Isolation is the two-uid mode's owners (see Isolation); nil is the
	// same-uid mode.
	Isolation *Isolation
}

// SessionsDir is the parent of every session inbox.
func (l Layout) SessionsDir() string { return filepath.Join(l.Root, sessionsDirName) }

// ServingDir holds the heartbeats. It sits beside SessionsDir, never inside
// a session, so a heartbeat cannot keep an inbox from being removed (docs/GLOSSARY.md, "cleanup order").
func (l Layout) ServingDir() string { return filepath.Join(l.Root, servingDirName) }

// TempDir is where atomic writes stage their content before the link or
// rename that publishes it. It must be on the same filesystem as the tree,
// and nothing watches it.
func (l Layout) TempDir() string { return filepath.Join(l.Root, tempDirName) }

// SessionDir is the inbox of the serving session: every child of that
// session writes into it.
func (l Layout) SessionDir(session string) (string, error) {
	esc, err := EscapeSessionID(session)
	if err != nil {
		return "", err
	}
	return filepath.Join(l.Root, sessionsDirName, esc), nil
}

// RequestsDir is where children drop requests for session; the broker
// watches it.
func (l Layout) RequestsDir(session string) (string, error) {
	return l.sessionSubdir(session, requestsDirName)
}

// ResponsesDir is where the broker answers; each child watches it for its
// own request id.
func (l Layout) ResponsesDir(session string) (string, error) {
	return l.sessionSubdir(session, responsesDirName)
}

func (l Layout) sessionSubdir(session, name string) (string, error) {
	dir, err := l.SessionDir(session)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// RequestPath is the file a child publishes request requestID in.
func (l Layout) RequestPath(session, requestID string) (string, error) {
	return l.mailPath(session, requestsDirName, requestID)
}

// ResponsePath is the file the broker answers request requestID in. It is
// built from the validated id, never from a name found on disk.
func (l Layout) ResponsePath(session, requestID string) (string, error) {
	return l.mailPath(session, responsesDirName, requestID)
}

func (l Layout) mailPath(session, dir, requestID string) (string, error) {
	if err := wire.ValidateID(requestID); err != nil {
		return "", err
	}
	// ValidateID admits "." and "..", but with the extension they are the
	// plain names "..json" and "...json", never a step out of the tree.
	parent, err := l.sessionSubdir(session, dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(parent, requestID+jsonExt), nil
}

// HeartbeatPath is the serving session's heartbeat record.
func (l Layout) HeartbeatPath(session string) (string, error) {
	esc, err := EscapeSessionID(session)
	if err != nil {
		return "", err
	}
	return filepath.Join(l.Root, servingDirName, esc+jsonExt), nil
}

// IsMailName reports whether a directory entry is one a mailbox reader
// lists: a name ending in ".json" that is not a dotfile. pi's temporary
// files (<name>.json.<pid>.<ms>.tmp) and renameio's (.<name><random>) both
// fail it, so a half-written file is never picked up by name. A request id
// that begins with "." passes ValidateID but names a dotfile no courier
// reader lists; pi and courier children never mint one.
func IsMailName(name string) bool {
	return len(name) > len(jsonExt) &&
		strings.HasSuffix(name, jsonExt) &&
		name[0] != '.' &&
		!strings.ContainsRune(name, '/')
}

// RequestIDFromName returns the request id a mail file name carries, or an
// error wrapping ErrInvalidID when the name is not <valid id>.json.
func RequestIDFromName(name string) (string, error) {
	if !IsMailName(name) {
		return "", fmt.Errorf("%w: %q is not a mailbox file name", wire.ErrInvalidID, name)
	}
	id := strings.TrimSuffix(name, jsonExt)
	if err := wire.ValidateID(id); err != nil {
		return "", fmt.Errorf("file %q: %w", name, err)
	}
	return id, nil
}

// StateDir is where courier keeps its own state beside pi's tree
// (session-grant journals): <root>/courier. pi never looks there.
func (l Layout) StateDir() string { return filepath.Join(l.Root, stateDirName) }

// EnsureDir creates dir, which must lie inside the root, and its missing
// parents with mode 0700.
func (l Layout) EnsureDir(dir string) error {
	if err := l.within(dir); err != nil {
		return err
	}
	return mkdirAllPrivate(dir)
}

// EnsureInbox creates the session's requests/ and responses/ directories
// (and their parents) as a child does before its first request. New
// directories are 0700; existing ones keep their mode, so a pi 20.x tree
// (0755) is read, never altered. In the isolation mode only the broker
// creates them (requests/ 1730, the rest 0750, of the ask group); a
// child's call checks that they exist and otherwise returns an error
// wrapping ErrIsolation.
func (l Layout) EnsureInbox(session string) error {
	dir, err := l.SessionDir(session)
	if err != nil {
		return err
	}
	if l.Isolation != nil {
		return l.ensureInboxIsolated(dir)
	}
	for _, sub := range []string{requestsDirName, responsesDirName} {
		if err := mkdirAllPrivate(filepath.Join(dir, sub)); err != nil {
			return err
		}
	}
	return nil
}

// mkdirAllPrivate creates dir and any missing parents with mode 0700,
// whatever the umask. Only directories it creates are chmodded: an existing
// directory's mode is someone's decision (pi 20.x makes them 0755).
func mkdirAllPrivate(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("create mailbox directory %s: %w", dir, errors.New("exists and is not a directory"))
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirAllPrivate(parent); err != nil {
			return err
		}
	}
	return mkdirPrivate(dir)
}

// mkdirPrivate creates one directory 0700. It is not an error if the
// directory exists already (another process may have won the race).
func mkdirPrivate(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, os.ErrExist) {
		if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
			return nil
		}
		return fmt.Errorf("create mailbox directory %s: %w", dir, err)
	}
	if err != nil {
		return fmt.Errorf("create mailbox directory %s: %w", dir, err)
	}
	// Mkdir applied the umask; a umask such as 0277 would leave even the
	// owner without access. Set the exact mode on the directory we made.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("set mode of mailbox directory %s: %w", dir, err)
	}
	return nil
}
