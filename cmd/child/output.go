package main

import (
	"strconv"

	"github.com/seed6639df8c/courier/decision"
	"github.com/seed6639df8c/courier/internal/strictjson"
	"github.com/seed6639df8c/courier/provenance"
)

// appendDecision appends the decision as child ask prints it on stdout:
// one JSON object and a newline, the members of `output` in its order,
// byte for byte what encoding/json (HTML escaping off) printed for it.
// By hand, because encoding/json's first use of the output's types cost
// the child about 0.1 ms of reflection per ask (BENCHMARKS.md, "Child
// processes on the critical path"); TestAppendDecisionMatchesEncodingJSON
// and FuzzAppendDecision hold it to encoding/json.
func appendDecision(dst []byte, requestID string, d decision.Decision) []byte {
	dst = append(dst, `{"requestId":`...)
	dst = strictjson.AppendString(dst, requestID)
	dst = append(dst, `,"approved":`...)
	dst = strconv.AppendBool(dst, d.Approved())
	dst = append(dst, `,"state":`...)
	dst = strictjson.AppendString(dst, string(d.State))
	dst = append(dst, `,"denialReason":`...)
	if d.DenialReason == "" {
		dst = append(dst, "null"...)
	} else {
		dst = strictjson.AppendString(dst, d.DenialReason)
	}
	dst = append(dst, `,"unavailable":`...)
	dst = strconv.AppendBool(dst, d.Unavailable())
	dst = append(dst, `,"decidedBy":`...)
	dst = provenance.AppendJSON(dst, d.DecidedBy)
	if d.SessionGrantWidth != "" {
		dst = append(dst, `,"sessionGrantWidth":`...)
		dst = strictjson.AppendString(dst, string(d.SessionGrantWidth))
	}
	return append(dst, "}\n"...)
}
