// Package grants keeps session grants on disk, so that "yes, for this
// session" survives a restart: the broker journals its whole-session
// grants, and a child records the grants its parent gave it for its own
// session.
//
// A journal is one JSON file (rules.Snapshot), rewritten atomically and
// made durable on every change, in courier's state directory beside the
// mailbox: <root>/courier/grants/<broker|child>/<escaped session>.json.
// It is read back like any mailbox file: untrusted, size-capped, validated.
package grants

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/rules"
)

// Side says whose grants a journal holds.
type Side string

// The two sides that keep grants.
const (
	// Broker journals are the serving session's whole-session grants.
	Broker Side = "broker"
	// Child journals are a child session's own "this subagent only" grants.
	Child Side = "child"
)

// Journal persists the grants of one session.
type Journal struct {
	layout mailbox.Layout
	path   string
	mu     sync.Mutex // serializes saves, so the last snapshot wins
}

// Open returns the journal of session on side. Nothing is read or
// created until Load or Save.
func Open(layout mailbox.Layout, side Side, session string) (*Journal, error) {
	esc, err := mailbox.EscapeSessionID(session)
	if err != nil {
		return nil, fmt.Errorf("grant journal: %w", err)
	}
	path := filepath.Join(layout.StateDir(), "grants", string(side), esc+".json")
	return &Journal{layout: layout, path: path}, nil
}

// Path is the journal file.
func (j *Journal) Path() string { return j.path }

// Load restores the journal into into. A missing journal is an empty one.
// A journal that is unsafe to read or malformed is an error naming the
// file: it is never half-applied.
func (j *Journal) Load(into *rules.SessionRules) error {
	data, err := mailbox.ReadFile(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("grant journal: %w", err)
	}
	snap, err := rules.DecodeSnapshot(data)
	if err != nil {
		return fmt.Errorf("grant journal %s: %w", j.path, err)
	}
	if err := into.Restore(snap); err != nil {
		return fmt.Errorf("grant journal %s: %w", j.path, err)
	}
	return nil
}

// Save writes from's grants durably: atomically replaced, then the file
// and its directory synced, so an acknowledged grant survives a crash.
func (j *Journal) Save(from *rules.SessionRules) error {
	data, err := encodeSnapshot(from.Snapshot())
	if err != nil {
		return fmt.Errorf("grant journal %s: %w", j.path, err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.layout.EnsureDir(filepath.Dir(j.path)); err != nil {
		return fmt.Errorf("grant journal: %w", err)
	}
	if err := j.layout.WriteFile(j.path, data, mailbox.WriteOptions{SyncDir: true}); err != nil {
		return fmt.Errorf("grant journal: %w", err)
	}
	return nil
}
