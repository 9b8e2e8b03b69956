// Package judge is the AI judge authorizer: it shows a model the minimal
// evidence of a bash ask (seed 003) and asks it for a verdict, deny-first.
// cmd/courier-authz-judge serves it as a plugin; docs/JUDGE.md says how to
// run it, decision 0026 why it is built so.
//
// # What the model sees
//
// Only what can change its verdict, rendered from a versioned template
// ([PromptVersion]): the complete bash input; the units that asked, when
// they differ from it; the requester's working directory, or "unknown";
// the serving session's conversation (user and assistant text, compaction
// summaries labelled derived and untrusted) when the operator disclosed
// it; and for a forwarded ask the requesting agent's name with the notice
// that this is a child request and that the conversation is the serving
// root's, not the child's. Never the request id, a session id, the
// surface, the child's message or payload, or the model's own metadata:
// those belong to the review log. Every piece of untrusted text is fenced
// so that it cannot close its fence, and the model is told it is data.
//
// # What it answers
//
// The model must answer one JSON object, {"verdict", "reason", "code"},
// and nothing else; anything else is malformed and defers. The judge
// keeps these rules, whatever the model says:
//
//   - Bash only: any other surface, or a bash ask whose complete input the
//     child did not fix structurally, defers before any model call
//     (not_bash, missing_input, input_too_long).
//   - A call that fails defers with its code: timeout (the config's, or
//     the broker's deadline for the link, whichever is sooner), transport
//     (network, 5xx, rate limit), api_error (a 4xx: key, model name),
//     refused (the model or the provider's filter declined), malformed.
//   - A deny stands, with the model's reason.
//   - An allow stands only when allow_enabled is set and every fact the
//     allow rests on was in the evidence: the complete input (always), the
//     working directory when the command depends on it (relative paths, a
//     directory change, a glob, a project tool: see cwd.go), and a user
//     turn of the conversation. Otherwise it defers with the code of the
//     first fact missing: missing_cwd, missing_intent, or allows_disabled
//     when none is missing.
//   - A reason that copies a run of the conversation's words is withheld:
//     it would carry the conversation into the review log and to the
//     child.
//
// The broker still caps what the judge says: its delegation envelope, a
// failure verdict for a judge that breaks, shadow mode.
//
// # Models
//
// The judge calls Anthropic's Messages API, or the OpenAI chat completions
// API that llama.cpp, vLLM and Ollama also speak, through the providers'
// official Go SDKs, configured by the operator's file ([Config]) alone:
// neither SDK reads its environment variables here, neither retries, and
// no response body is read past [MaxResponseBytes].
package judge
