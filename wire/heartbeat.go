package wire

import "math"

// Heartbeat is a serving node's liveness record, serving/<id>.json. A
// broker rewrites it every second while it serves; a 25.x child gives up
// on a parent whose record is missing, stale or names a dead pid.
type Heartbeat struct {
	SessionID string
	PID       int
	// UpdatedAt is when the record was last written, ms since the epoch.
	UpdatedAt int64
	// ResponseBinding is courier's extension (pi ignores it): the binding
	// every response of this serving node carries, BindingSHA256 for a
	// courier broker. A child that reads it refuses unbound responses.
	// Empty when absent or not a string.
	ResponseBinding string
}

type heartbeatWire struct {
	SessionID       string `json:"sessionId"`
	PID             int    `json:"pid"`
	UpdatedAt       int64  `json:"updatedAt"`
	ResponseBinding string `json:"responseBinding,omitempty"`
}

// DecodeHeartbeat reads a heartbeat record the way pi's liveness judge
// does: sessionId a non-empty string, pid a positive integer (a malformed
// pid must never reach kill(0|-n, 0)), updatedAt a finite number.
func DecodeHeartbeat(data []byte) (Heartbeat, error) {
	o, err := parseObject(data)
	if err != nil {
		return Heartbeat{}, err
	}
	var h Heartbeat
	var ferr *FieldError
	if h.SessionID, ferr = o.nonEmptyStr("sessionId", "sessionId"); ferr != nil {
		return Heartbeat{}, ferr
	}
	pid, ferr := o.millis("pid", "pid")
	if pidRaw, _ := o.get("pid"); ferr == nil && !isIntegral(pidRaw) {
		ferr = &FieldError{Field: "pid", Reason: "expected a positive integer, got a fraction"}
	}
	if ferr == nil && (pid <= 0 || pid > math.MaxInt32) {
		ferr = &FieldError{Field: "pid", Reason: "expected a positive integer process id"}
	}
	if ferr != nil {
		return Heartbeat{}, ferr
	}
	h.PID = int(pid)
	if h.UpdatedAt, ferr = o.millis("updatedAt", "updatedAt"); ferr != nil {
		return Heartbeat{}, ferr
	}
	if raw, ok := o.get("responseBinding"); ok {
		// Optional: a malformed value is ignored, as pi ignores the field.
		h.ResponseBinding, _ = rawString(raw, "responseBinding")
	}
	return h, nil
}

// EncodeHeartbeat writes a heartbeat record in pi's shape.
func EncodeHeartbeat(h Heartbeat) ([]byte, error) {
	if h.SessionID == "" || h.PID <= 0 {
		return nil, &FieldError{Field: "sessionId/pid", Reason: "a heartbeat needs a session id and a positive pid"}
	}
	return encodeCompact(heartbeatWire(h))
}
