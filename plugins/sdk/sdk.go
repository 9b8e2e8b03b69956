// Package sdk serves a Go authorizer as a courier plugin. A plugin's main
// is one call:
//
//	func main() {
//		sdk.Serve(myAuthorizer{})
//	}
//
// where myAuthorizer implements [Authorizer]: it receives the evidence of
// one permission ask ([authorizer.Evidence]) and returns allow, deny with a
// reason, or defer ([authorizer.Verdict]). It may also implement
// [protocol.Describer] to name itself and [protocol.HealthChecker].
//
// # What a judge gets and gives
//
// Beside the child-fixed facts, the evidence of a bash ask carries
// [authorizer.Evidence.Bash]: the complete bash input and the units of it
// that asked, as two facts; it is nil when the child did not fix the
// complete input in a structured field (then do not allow on the display
// value alone: it may be only the unit that asked). With the operator's
// "disclose": ["conversation"], [authorizer.Evidence.Conversation] holds
// the serving session's user and assistant text (compaction summaries
// marked Derived), and says whether the ask was forwarded by a child and
// by which agent. A verdict may carry a stable [authorizer.Verdict.Code]
// and a reason for a defer too ([DeferWith], [DenyWith]), and report how
// it judged in [authorizer.Verdict.Meta] (model, prompt version, tokens,
// latency): the broker cleans and bounds them and writes them in its
// review log, never anything of the evidence.
//
// # Rules for a plugin binary
//
//   - Write nothing to stdout before Serve: the broker reads the first line
//     of stdout as the go-plugin handshake and refuses the plugin otherwise.
//     After Serve, stdout and stderr are forwarded to the broker's
//     diagnostic log, capped.
//   - Log to stderr; Serve's own logger writes hclog JSON lines there.
//   - Take settings from flags (the operator writes them as "args" in the
//     link's config) or from a file they name. The plugin runs with a
//     minimal environment (PATH and TMPDIR), working directory "/", and
//     empty stdin.
//   - Honour ctx in Authorize: the broker cancels it at the link's deadline
//     and counts a late answer as a failure.
//   - A panic in Authorize is recovered and reported as a failure, which
//     makes the broker restart the process.
//
// The broker decides what a verdict may do: an allow on a path or
// external_directory ask is capped to defer, an allow never grants for the
// session, and a failure never allows. Package authorizer states the rules
// an authorizer must obey and the limits the broker keeps; a plugin needs
// only it and this package, neither of which links the broker (see
// deps_test.go).
package sdk

import (
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/plugins/protocol"
)

// Authorizer is what a plugin implements; see protocol.Authorizer.
type Authorizer = protocol.Authorizer

// Serve serves a as a courier authorizer plugin and returns when the broker
// shuts it down. Run directly, not by a broker, it prints a hint to stderr
// and exits with status 1.
func Serve(a Authorizer) {
	name := filepath.Base(os.Args[0])
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: protocol.Handshake,
		Plugins:         plugin.PluginSet{protocol.PluginName: &protocol.GRPCPlugin{Impl: a, Name: name}},
		GRPCServer:      plugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       name,
			Level:      hclog.Info,
			Output:     os.Stderr,
			JSONFormat: true,
		}),
	})
}

// Verdict constructors, so that a plugin reads as its policy.

// Allow approves the ask once.
func Allow() authorizer.Verdict { return authorizer.Verdict{Kind: authorizer.Allow} }

// Deny refuses the ask; reason reaches the child agent, so make it teach.
func Deny(reason string) authorizer.Verdict {
	return authorizer.Verdict{Kind: authorizer.Deny, Reason: reason}
}

// Defer passes the ask on to the next link, then the terminal.
func Defer() authorizer.Verdict { return authorizer.Verdict{Kind: authorizer.Defer} }

// DenyWith refuses the ask with a stable code for the review log
// (lower_snake_case, at most 40 bytes, e.g. "force_push") and a reason
// the child agent reads.
func DenyWith(code, reason string) authorizer.Verdict {
	return authorizer.Verdict{Kind: authorizer.Deny, Code: code, Reason: reason}
}

// DeferWith passes the ask on, saying why in the review log: a stable
// code (e.g. "not_bash", "missing_cwd") and a short reason. Neither
// reaches the child.
func DeferWith(code, reason string) authorizer.Verdict {
	return authorizer.Verdict{Kind: authorizer.Defer, Code: code, Reason: reason}
}
