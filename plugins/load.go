package plugins

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/chain"
	"github.com/seed6639df8c/courier/plugins/confine"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
)

// Options tune how plugins are run. The zero Options are the defaults.
type Options struct {
	// Logger is the broker's diagnostic log: plugin lifecycle, plugin
	// output (capped) and failures. nil discards.
	Logger *zerolog.Logger
	// StartTimeout bounds a plugin's start, handshake and Describe;
	// default 10 s.
	StartTimeout time.Duration
	// BackoffBase is the wait before the second consecutive restart,
	// doubling after each further failure; default 250 ms. The first
	// restart after a failure is immediate.
	BackoffBase time.Duration
	// BackoffMax caps the backoff; default 30 s.
	BackoffMax time.Duration
	// TempDir holds each process's private directory (its socket and its
	// TMPDIR); default os.TempDir(), or /tmp when that path is too long
	// for a unix socket.
	TempDir string
	// Confinement is how plugins are confined (confine.Probe finds it
	// once at start; the program must dispatch confine.Command to
	// confine.Main). nil runs them as before: their own process group
	// and, on Linux, a parent-death signal, nothing more.
	Confinement *confine.Plan
	// Conversation supplies the serving session's user-intent text to
	// the links that disclose "conversation" (chain.WithConversation);
	// nil means none.
	Conversation func() *authorizer.Conversation
}

func (o Options) logger() zerolog.Logger {
	if o.Logger == nil {
		return zerolog.Nop()
	}
	return *o.Logger
}

func (o Options) startTimeout() time.Duration {
	if o.StartTimeout <= 0 {
		return 10 * time.Second
	}
	return o.StartTimeout
}

func (o Options) backoffBase() time.Duration {
	if o.BackoffBase <= 0 {
		return 250 * time.Millisecond
	}
	return o.BackoffBase
}

func (o Options) backoffMax() time.Duration {
	if o.BackoffMax <= 0 {
		return 30 * time.Second
	}
	return o.BackoffMax
}

// maxTempDirLen keeps <TempDir>/plugin-dirNNNNNNNNN/pluginNNNNNNNNN under
// the 108-byte limit of a unix socket path on Linux (104 on macOS).
const maxTempDirLen = 60

func (o Options) tempDir() string {
	if o.TempDir != "" {
		return o.TempDir
	}
	if d := os.TempDir(); len(d) <= maxTempDirLen {
		return d
	}
	return "/tmp"
}

// LinkError is a link that was not loaded or did not start at load. Its
// Err wraps ErrBinary or ErrChecksum when the link was disabled, and
// chain.ErrUnavailable when the plugin only failed to start (it is retried
// on the next ask).
type LinkError struct {
	Name string
	Path string
	// Disabled reports that the link will never be started: every ask gets
	// its failure verdict.
	Disabled bool
	Err      error
}

func (e *LinkError) Error() string {
	if e.Disabled {
		return fmt.Sprintf("authorizer %q disabled: %v", e.Name, e.Err)
	}
	return fmt.Sprintf("authorizer %q did not start: %v", e.Name, e.Err)
}

func (e *LinkError) Unwrap() error { return e.Err }

// Load builds the broker's chain from the configured links, in config
// order, and starts every plugin (concurrently, each within StartTimeout)
// so that startup problems show at once and the first ask finds them warm.
//
// Problems are returned, not fatal: a link whose binary is missing or
// unusable, or whose checksum differs, is disabled (a *LinkError with
// Disabled set, and an authorizer_link.disabled review entry): it stays
// in the chain and every ask gets its failure verdict, so a broken link
// never widens what the chain allows. A plugin that is fine on disk but
// fails to start is reported and retried on the next ask. Close the
// returned chain to stop the plugins.
func Load(ctx context.Context, links []rules.AuthorizerLink, log *reviewlog.Log, opts Options) (*chain.Chain, []error) {
	members, problems := loadMembers(ctx, links, log, opts)
	return chain.New(log, members, chain.WithLogger(opts.logger()), chain.WithConversation(opts.Conversation)), problems
}

// loadMembers is Load without building the chain.
func loadMembers(ctx context.Context, links []rules.AuthorizerLink, log *reviewlog.Log, opts Options) ([]chain.Member, []error) {
	logger := opts.logger()
	if len(links) > 0 {
		logger.Info().Str("confinement", opts.Confinement.Summary()).Msg("authorizer plugin confinement")
	}
	members := make([]chain.Member, len(links))
	errs := make([]error, len(links))
	var wg sync.WaitGroup
	for i, spec := range links {
		m := chain.Member{
			Mode:      chain.Enforce,
			Disclose:  authorizer.Disclosure{Cwd: spec.DiscloseCwd, Principal: spec.DisclosePrincipal, Conversation: spec.DiscloseConversation},
			OnFailure: authorizer.Deny,
		}
		if spec.Mode == rules.LinkShadow {
			m.Mode = chain.Shadow
		}
		if spec.OnFailure == rules.LinkFailDefer {
			m.OnFailure = authorizer.Defer
		}
		f, err := openVerified(spec.Path, spec.SHA256)
		if err != nil {
			lerr := &LinkError{Name: spec.Name, Path: spec.Path, Disabled: true, Err: err}
			errs[i] = lerr
			m.Link = disabledLink{name: spec.Name, err: err}
			members[i] = m
			logger.Error().Str("link", spec.Name).Str("path", spec.Path).Str("at", spec.At).Err(err).
				Msg("authorizer link disabled: every ask gets its failure verdict")
			if werr := log.Emit(reviewlog.LinkDisabledEntry{Name: spec.Name, Path: spec.Path, Error: err}); werr != nil {
				logger.Error().Err(werr).Msg("review log write failed")
			}
			continue
		}
		f.Close()
		sup := newSupervised(spec, opts)
		m.Link = sup
		members[i] = m
		wg.Go(func() {
			// The start bounds itself (StartTimeout for the handshake and
			// again for Describe); ctx is the caller's.
			if _, err := sup.acquire(ctx); err != nil {
				errs[i] = &LinkError{Name: spec.Name, Path: spec.Path, Err: err}
			}
		})
	}
	wg.Wait()
	var problems []error
	for _, err := range errs {
		if err != nil {
			problems = append(problems, err)
		}
	}
	return members, problems
}
