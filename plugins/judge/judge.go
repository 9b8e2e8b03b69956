package judge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/plugins/protocol"
)

// Judge is the AI judge authorizer. It is safe for concurrent use.
type Judge struct {
	cfg   Config
	model model
}

// New returns the judge of cfg (a parsed [Config]); getenv looks up the
// API key's variable when the config names one.
func New(cfg Config, getenv func(string) string) (*Judge, error) {
	key, err := cfg.APIKey(getenv)
	if err != nil {
		return nil, err
	}
	var m model
	switch cfg.Provider {
	case ProviderAnthropic:
		m = newAnthropic(cfg, key)
	case ProviderOpenAI:
		m = newOpenAI(cfg, key)
	default:
		return nil, fmt.Errorf("%w: provider: %q", ErrConfig, cfg.Provider)
	}
	return &Judge{cfg: cfg, model: m}, nil
}

// Describe names the judge, its model and whether it may allow.
func (j *Judge) Describe(context.Context) (protocol.Description, error) {
	allows := "never allows (allow_enabled is off)"
	if j.cfg.AllowEnabled {
		allows = "allows only when every fact an allow rests on is known"
	}
	return protocol.Description{
		Name:    "courier-authz-judge",
		Version: PromptVersion,
		Summary: fmt.Sprintf("judges bash asks with %s model %s; %s", j.cfg.Provider, j.cfg.Model, allows),
	}, nil
}

// Authorize judges one ask. It never returns an error for what it cannot
// judge: that is a defer with a code, so that the link's failure verdict
// (deny by default) is kept for a judge that is itself broken.
func (j *Judge) Authorize(ctx context.Context, ev authorizer.Evidence) (authorizer.Verdict, error) {
	if !strings.EqualFold(strings.TrimSpace(authorizer.EnvelopeSurface(ev)), "bash") {
		return deferred(CodeNotBash, "the judge judges bash asks only"), nil
	}
	if ev.Bash == nil || strings.TrimSpace(ev.Bash.Complete) == "" {
		return deferred(CodeMissingInput, "the ask does not carry the complete bash input as a structured field"), nil
	}
	if n := inputBytes(ev.Bash); n > MaxInputBytes {
		return deferred(CodeInputTooLong, fmt.Sprintf("the bash input is %d bytes, more than the %d the judge shows a model whole", n, MaxInputBytes)), nil
	}
	p := newPacket(ev)
	r, err := render(p)
	if err != nil {
		return authorizer.Verdict{}, fmt.Errorf("judge: render prompt %s: %w", PromptVersion, err)
	}

	meta := authorizer.Meta{Model: j.cfg.Model, PromptVersion: PromptVersion}
	callCtx, cancel := context.WithTimeout(ctx, callDeadline(ctx, time.Duration(j.cfg.Timeout)))
	defer cancel()
	start := time.Now()
	rep, err := j.model.complete(callCtx, r)
	meta.LatencyMs = time.Since(start).Milliseconds()
	if rep.Model != "" {
		meta.Model = rep.Model
	}
	meta.InputTokens, meta.OutputTokens = rep.InputTokens, rep.OutputTokens

	var v authorizer.Verdict
	switch {
	case err != nil:
		code := CodeTransport
		if ce := (*callError)(nil); errors.As(err, &ce) {
			code = ce.code
		}
		v = deferred(code, err.Error())
	case rep.Refused:
		v = deferred(CodeRefused, "the model refused to judge the ask")
	default:
		a, perr := parseAnswer(rep.Text)
		switch {
		case perr != nil && shownConversation(ev) && len(rep.Text) <= MaxAnswerBytes:
			// A parse error quotes the answer (a verdict, a key): words
			// the model may have taken from the conversation, which must
			// not reach the review log. (An oversized answer's error
			// gives its size only.)
			v = deferred(CodeMalformed, fmt.Sprintf("%v: the answer (%d bytes) is not one JSON verdict object; its text is withheld, the model saw the conversation", errMalformed, len(rep.Text)))
		case perr != nil:
			v = deferred(CodeMalformed, perr.Error())
		default:
			v = j.decide(ev, p, a)
		}
	}
	v.Meta = meta
	return v, nil
}

// decide turns the model's answer into the judge's verdict, deny-first: a
// deny stands; an allow stands only when allows are enabled and every
// fact it rests on was in the evidence, else it is a defer naming the
// first fact missing (or allows_disabled when none is: the log then says
// the judge would have allowed).
//
// The model's own words never leave the judge when it was shown the
// conversation: its reason goes to the review log and, for a deny, to the
// child, which for a forwarded ask is not the session whose conversation
// it is, and a model asked not to quote may still repeat a word of it (a
// name, a code word). Then a deny carries a fixed teaching reason and a
// defer none; only the code, one of modelCodes, says why. Without a
// conversation the reason can only restate the evidence the asker sent,
// and is kept.
func (j *Judge) decide(ev authorizer.Evidence, p packet, a answer) authorizer.Verdict {
	reason := a.Reason
	if shownConversation(ev) {
		reason = ""
	}
	code := modelCode(a.Code)
	switch a.Kind {
	case authorizer.Deny:
		code = codeOr(code, CodeDenied)
		if reason == "" {
			reason = "The operator's AI judge refused this command (" + code + "). Do not retry it or work around it: tell the user what you need and why."
		}
		return authorizer.Verdict{Kind: authorizer.Deny, Reason: reason, Code: code}
	case authorizer.Allow:
		if p.Cwd == "" {
			if sensitive, why := cwdSensitive(ev.Bash.Complete); sensitive {
				return deferred(CodeMissingCwd, "the model would allow, but the working directory is unknown and the command depends on it ("+why+")")
			}
		}
		if !hasUserIntent(ev.Conversation) {
			return deferred(CodeMissingIntent, "the model would allow, but no user turn of the conversation was available to show the user's intent")
		}
		if !j.cfg.AllowEnabled {
			return deferred(CodeAllowsDisabled, "the model would allow; allows are disabled (allow_enabled)")
		}
		return authorizer.Verdict{Kind: authorizer.Allow, Reason: reason}
	}
	return deferred(codeOr(code, CodeUncertain), reason)
}

// shownConversation reports whether the prompt held the conversation:
// then no text the model wrote may leave the judge.
func shownConversation(ev authorizer.Evidence) bool {
	return ev.Conversation != nil && len(ev.Conversation.Items) > 0
}

// modelCodes are the codes a model may give (the system prompt lists
// them). A code is free text the model chose, and it reaches the review
// log: any other is dropped, so that not even a code can carry a word of
// the conversation.
var modelCodes = map[string]bool{
	"destructive": true, "irreversible": true, "exceeds_intent": true, "unclear_intent": true,
	"exfiltration": true, "privilege": true, "outside_workspace": true, "uncertain": true,
	CodeDenied: true, CodeMissingCwd: true,
}

// modelCode is the model's code when it is one of modelCodes, else "".
func modelCode(code string) string {
	if modelCodes[code] {
		return code
	}
	return ""
}

// deferred is a defer with its code and reason.
func deferred(code, reason string) authorizer.Verdict {
	return authorizer.Verdict{Kind: authorizer.Defer, Code: code, Reason: reason}
}

// codeOr is code, or def when code is empty.
func codeOr(code, def string) string {
	if code == "" {
		return def
	}
	return code
}
