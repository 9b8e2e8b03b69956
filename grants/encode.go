package grants

import (
	"bytes"
	"encoding/json"

	"github.com/seed6639df8c/courier/rules"
)

// encodeSnapshot writes a snapshot as JSON without HTML escaping, so a
// pattern such as <opaque-bash-wrapper> reads as written.
func encodeSnapshot(s rules.Snapshot) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
