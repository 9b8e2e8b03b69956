package reviewlog

import "strconv"

// The entries of the authorizer chain (packages chain, plugins and
// relay). Each type's comment is its event's documentation; the keys are
// listed as the line holds them.

// ChainResolvedEntry ([ChainResolved]) is written before any authorizer
// link runs on an ask, naming the links in order, because a link that
// defers otherwise leaves no trace.
//
// Keys: links, requestId, shadowLinks (only when there are some).
type ChainResolvedEntry struct {
	RequestID string
	// Links are the enforcing links in consultation order; nil writes
	// null, so a caller passes an empty list for none.
	Links []string
	// ShadowLinks are the links consulted in shadow mode; empty writes no
	// shadowLinks key.
	ShadowLinks []string
}

// ChainDelegatedEntry ([ChainDelegated]) is written by a relaying node
// (broker serve --terminal relay) for each ask it relays, before relaying
// it: the node runs no authorizer links, because the node that
// adjudicates runs its own (one chain per node), and the entry names the
// links configured here that were not consulted. pi writes it where an
// adjudicating node would write [ChainResolvedEntry].
//
// Keys: links, requestId.
type ChainDelegatedEntry struct {
	RequestID string
	// Links are the configured links, in config order, none of which
	// runs; nil writes null, so a caller passes an empty list for none.
	Links []string
}

// LinkVerdictEntry ([LinkVerdict]) records what one enforcing link
// answered on one ask, in consultation order, so a deferring link leaves
// a trace too. courier's addition.
//
// Keys: capped (only when true), code (only when set), error (only when
// Error is set), failure (only when set), inputTok (only when not 0),
// latencyMs, linkVerdict (only when set), model (only when set),
// modelLatencyMs (only when not 0), name, outputTok (only when not 0),
// promptVersion (only when set), reason, requestId, verdict.
//
// The token counts are inputTok and outputTok, not …Tokens: a key naming
// a token is masked as a secret (IsSensitiveKey).
type LinkVerdictEntry struct {
	RequestID string
	// Name is the link's.
	Name string
	// Verdict is the verdict that counted: allow, deny or defer.
	Verdict string
	// Reason is a deny's or a defer's reason; "" writes null.
	Reason string
	// LatencyMs is the call's wall time in milliseconds, as the broker
	// measured it.
	LatencyMs float64
	// Code is the link's stable code for its verdict (authorizer.CleanCode).
	Code string
	// Model, PromptVersion, InputTokens, OutputTokens and ModelLatencyMs
	// are what the link reported of how it judged (authorizer.CleanMeta):
	// the model, its prompt's version, the tokens spent and the model
	// call's own latency in milliseconds.
	Model, PromptVersion      string
	InputTokens, OutputTokens int64
	ModelLatencyMs            int64
	// Capped is set when the delegation envelope turned the link's allow
	// into a defer, and LinkVerdict then says what the link answered
	// ("allow").
	Capped      bool
	LinkVerdict string
	// Failure and Error are set when the link could not judge and its
	// failure policy gave the verdict: Failure names the class of the
	// failure ("timed out", …), Error is the error itself.
	Failure string
	Error   error
}

// LinkShadowEntry ([LinkShadow]) is [LinkVerdictEntry] for a link running
// in shadow mode: consulted and logged, never enforced, so an operator can
// judge a new authorizer against real traffic first. courier's addition.
type LinkShadowEntry LinkVerdictEntry

// LinkDisabledEntry ([LinkDisabled]) is written at startup for a
// configured link that could not be loaded (a missing binary, a checksum
// mismatch): it is never started, and every ask gets its failure verdict.
// courier's addition.
//
// Keys: error, name, path.
type LinkDisabledEntry struct {
	Name string
	// Path is the link's configured binary.
	Path string
	// Error is why it could not be loaded; nil writes no error key.
	Error error
}

func (ChainResolvedEntry) Event() string  { return ChainResolved }
func (ChainDelegatedEntry) Event() string { return ChainDelegated }
func (LinkVerdictEntry) Event() string    { return LinkVerdict }
func (LinkShadowEntry) Event() string     { return LinkShadow }
func (LinkDisabledEntry) Event() string   { return LinkDisabled }

func (e ChainResolvedEntry) appendDetails(d details) {
	d.strs("links", e.Links)
	d.str(KeyRequestID, e.RequestID)
	if len(e.ShadowLinks) > 0 {
		d.strs("shadowLinks", e.ShadowLinks)
	}
}

func (e ChainDelegatedEntry) appendDetails(d details) {
	d.strs("links", e.Links)
	d.str(KeyRequestID, e.RequestID)
}

func (e LinkVerdictEntry) appendDetails(d details) {
	if e.Capped {
		d.boolean("capped", true)
	}
	d.strIfSet("code", e.Code)
	d.errText("error", e.Error)
	d.strIfSet("failure", e.Failure)
	d.int64IfSet("inputTok", e.InputTokens)
	d.float("latencyMs", e.LatencyMs)
	d.strIfSet("linkVerdict", e.LinkVerdict)
	d.strIfSet("model", e.Model)
	d.int64IfSet("modelLatencyMs", e.ModelLatencyMs)
	d.str("name", e.Name)
	d.int64IfSet("outputTok", e.OutputTokens)
	d.strIfSet("promptVersion", e.PromptVersion)
	d.strOrNull("reason", e.Reason)
	d.str(KeyRequestID, e.RequestID)
	d.str("verdict", e.Verdict)
}

func (e LinkShadowEntry) appendDetails(d details) { LinkVerdictEntry(e).appendDetails(d) }

func (e LinkDisabledEntry) appendDetails(d details) {
	d.errText("error", e.Error)
	d.str("name", e.Name)
	d.str("path", e.Path)
}

// int64IfSet appends n when it is not 0, and nothing otherwise.
func (d details) int64IfSet(key string, n int64) {
	if n != 0 {
		start := len(d.r.buf)
		d.r.buf = strconv.AppendInt(d.r.buf, n, 10)
		d.done(key, start)
	}
}
