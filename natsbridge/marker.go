package natsbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/seed6639df8c/courier/internal/strictjson"
	"github.com/seed6639df8c/courier/mailbox"
	"github.com/seed6639df8c/courier/natsbox"
	"github.com/seed6639df8c/courier/wire"
)

// markerDirName is the bridge's directory under the mailbox's state
// directory (<root>/courier): one subdirectory per session, one marker
// per bridged request. It is not <root>/courier/nats, the embedded
// server's default store, so that no session name can meet the store's
// own directories.
const markerDirName = "nats-bridge"

// marker says that the request file of RequestID in the inbox came over
// NATS from Owner, so that its response goes back to Owner's subject.
// It is written before the request file and removed after the answer
// was published: a broker killed at any point finds on restart every
// request it still owes an answer (docs/decisions/0029).
type marker struct {
	RequestID string `json:"requestId"`
	Owner     string `json:"owner"`
	// Subject is the request's subject, for the review log.
	Subject string `json:"subject"`
	// RequestSHA256 is the digest of the request bytes
	// (wire.RequestDigest): only a response bound to it is published.
	RequestSHA256 string `json:"requestSha256"`
	// BridgedAt is when the request file was written, ms since the
	// epoch.
	BridgedAt int64 `json:"bridgedAt"`

	// answeredEarlier says that, when this run loaded the marker, the
	// inbox already held serve's answer to it: an earlier run wrote the
	// answer and was stopped before it published it, perhaps before it
	// logged the decision (publishAnswer says so). Not stored.
	answeredEarlier bool
}

// encodeMarker is the marker file's content.
func encodeMarker(m marker) ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// decodeMarker reads a marker file. The file is the broker's own, in a
// 0700 directory, but it is read as any file on disk is: strictly, every
// field checked, unknown keys refused.
func decodeMarker(data []byte) (marker, error) {
	if err := strictjson.Check(data); err != nil {
		return marker{}, fmt.Errorf("marker: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m marker
	if err := dec.Decode(&m); err != nil {
		return marker{}, fmt.Errorf("marker: %w", err)
	}
	if err := m.check(); err != nil {
		return marker{}, err
	}
	return m, nil
}

func (m marker) check() error {
	if err := wire.ValidateID(m.RequestID); err != nil {
		return fmt.Errorf("marker: requestId: %w", err)
	}
	if err := natsbox.CheckOwner(m.Owner); err != nil {
		return fmt.Errorf("marker: owner: %w", err)
	}
	if m.Subject == "" || strings.ContainsAny(m.Subject, " \t\r\n") {
		return fmt.Errorf("marker: subject %q: expected a NATS subject", m.Subject)
	}
	if len(m.RequestSHA256) != 64 || strings.Trim(m.RequestSHA256, "0123456789abcdef") != "" {
		return fmt.Errorf("marker: requestSha256 %q: expected 64 lower-case hex digits", m.RequestSHA256)
	}
	return nil
}

// markers is where a session's markers live.
type markers struct {
	layout mailbox.Layout
	dir    string
}

func newMarkers(layout mailbox.Layout, session string) (markers, error) {
	esc, err := mailbox.EscapeSessionID(session)
	if err != nil {
		return markers{}, err
	}
	dir := filepath.Join(layout.StateDir(), markerDirName, esc)
	if err := layout.EnsureDir(dir); err != nil {
		return markers{}, err
	}
	return markers{layout: layout, dir: dir}, nil
}

func (s markers) path(id string) string { return filepath.Join(s.dir, id+".json") }

// write publishes m atomically (staged and renamed, 0600), as the
// mailbox writes its files.
func (s markers) write(m marker) error {
	data, err := encodeMarker(m)
	if err != nil {
		return err
	}
	return s.layout.WriteFile(s.path(m.RequestID), data, mailbox.WriteOptions{})
}

func (s markers) remove(id string) error {
	if err := os.Remove(s.path(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing marker %s: %w", s.path(id), err)
	}
	return nil
}

// load reads every marker left in the directory: by a broker that
// stopped, or was killed, with requests it still owed answers. A file
// that is not a marker is reported and removed.
func (s markers) load(report func(error)) []marker {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		report(fmt.Errorf("listing markers in %s: %w", s.dir, err))
		return nil
	}
	var out []marker
	for _, e := range entries {
		name := e.Name()
		if !mailbox.IsMailName(name) {
			continue
		}
		path := filepath.Join(s.dir, name)
		data, err := mailbox.ReadFile(path)
		var m marker
		if err == nil {
			m, err = decodeMarker(data)
		}
		if err == nil && m.RequestID+".json" != name {
			err = fmt.Errorf("marker names request %q", m.RequestID)
		}
		if err != nil {
			report(fmt.Errorf("removing marker %s: %w", path, err))
			os.Remove(path)
			continue
		}
		out = append(out, m)
	}
	return out
}
