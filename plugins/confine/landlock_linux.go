package confine

import (
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
)

// systemDirs are read (and executed from) whole: programs, interpreters
// and their libraries. None holds a user's files.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/nix/store"}

// etcEntries are what a plugin may read of /etc: the dynamic linker's
// cache, time zones, TLS roots and name resolution for a judge that calls
// a model, the user and group names, courier's own directory. Not /etc whole: it holds secrets
// (ssh host keys, a root broker's shadow file, credentials of services).
var etcEntries = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
	"/etc/ssl", "/etc/pki", "/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf",
	"/etc/services", "/etc/protocols", "/etc/passwd", "/etc/group", "/etc/mime.types",
	// Where an operator keeps a plugin's settings files (the deny-list's
	// --rules, as its documentation shows).
	"/etc/courier",
}

// rulesFor is what a plugin may touch: read the system directories and
// those entries of /etc; read and execute its own binary (the open file
// behind pluginExe, not its directory); read and write its private
// directory (its socket and TMPDIR) and /dev/null; read the random
// devices. Nothing else: no /proc (so no /proc/<broker pid>), no /tmp
// beyond its own directory, no home, no mailbox, no agent directory.
func rulesFor(private string) []landlock.Rule {
	// Landlock refuses directory rights on a file: sort /etc's entries
	// (a symlink counts as what it leads to, which is what the rule
	// covers).
	var etcDirs, etcFiles []string
	for _, p := range etcEntries {
		switch fi, err := os.Stat(p); {
		case err != nil:
		case fi.IsDir():
			etcDirs = append(etcDirs, p)
		default:
			etcFiles = append(etcFiles, p)
		}
	}
	return []landlock.Rule{
		landlock.RODirs(systemDirs...).IgnoreIfMissing(),
		landlock.RODirs(etcDirs...).IgnoreIfMissing(),
		landlock.ROFiles(etcFiles...).IgnoreIfMissing(),
		landlock.ROFiles(pluginExe),
		landlock.RWDirs(private),
		landlock.RWFiles("/dev/null"),
		landlock.ROFiles("/dev/urandom", "/dev/random", "/dev/zero").IgnoreIfMissing(),
	}
}

// landlockConfig is every restriction this version of go-landlock knows,
// downgraded to what the kernel supports (Probe reported the rest as
// missing). A link that declared "network" keeps TCP and UDP; IPC scopes
// (signals, abstract unix sockets) stay restricted for every link.
func landlockConfig(network bool) landlock.Config {
	cfg := landlock.V11.BestEffort()
	if network {
		cfg.HandledAccessNet = 0
	}
	return cfg
}
