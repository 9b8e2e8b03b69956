package natsembed

import (
	"fmt"
	"os"

	"github.com/seed6639df8c/courier/internal/fileperm"
)

// CheckConfigFile refuses an operator's server config (the --nats-config
// of the broker's embedded server) that others could have written, or
// that sits in a directory where others could put another in its place:
// it names the users, their passwords and their permissions, so whoever
// writes it decides who may answer asks. The same rule as the rules
// config and plugin binaries (internal/fileperm): its owner is the
// broker's user or root.
func CheckConfigFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("--nats-config %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("--nats-config %s: not a regular file", path)
	}
	if err := fileperm.CheckFile("NATS server config", path, fi, fileperm.SelfOrRoot); err != nil {
		return err
	}
	return fileperm.CheckDir("NATS server config", path, fileperm.SelfOrRoot)
}
