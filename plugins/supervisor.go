package plugins

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/chain"
	"github.com/seed6639df8c/courier/plugins/protocol"
	"github.com/seed6639df8c/courier/rules"
)

// maxReplyBytes caps one message from a plugin. A verdict is a few
// hundred bytes; go-plugin's own default would accept 2 GiB.
const maxReplyBytes = 1 << 20

// supervised is one configured link whose plugin runs as a process. It
// implements chain.Link and io.Closer.
//
// At most one process serves the link at a time. A process that fails (a
// crash, a hang past the deadline, a protocol violation) is retired and
// killed, and the next ask starts a fresh one. The first restart after a
// success is immediate; consecutive failures back off exponentially, and
// while backing off an ask fails at once (into the failure verdict)
// instead of waiting.
type supervised struct {
	spec   rules.AuthorizerLink
	opts   Options
	logger zerolog.Logger
	fork   *forker

	mu        sync.Mutex
	cur       *instance
	attempt   *startAttempt // the start in progress, nil when none
	gen       uint64        // starts so far; the current process's number
	failures  int           // consecutive failures since the last good answer
	notBefore time.Time     // no start before this (backoff)
	lastErr   error
	closed    bool
	bg        sync.WaitGroup // starts and kills in flight
}

// instance is one plugin process.
type instance struct {
	gen     uint64
	client  *plugin.Client
	rpc     *protocol.Client
	proc    *procRunner
	out     *pluginOutput
	streams []*lineSplitter
}

// startAttempt is one start in progress; done is closed when it ends.
type startAttempt struct {
	done chan struct{}
	inst *instance
	err  error
}

func newSupervised(spec rules.AuthorizerLink, opts Options) *supervised {
	return &supervised{
		spec:   spec,
		opts:   opts,
		logger: opts.logger().With().Str("link", spec.Name).Logger(),
		fork:   newForker(),
	}
}

// Name implements chain.Link.
func (s *supervised) Name() string { return s.spec.Name }

// Authorize implements chain.Link: one call, bounded by the link's
// timeout, on the current process or a freshly started one.
func (s *supervised) Authorize(ctx context.Context, ev authorizer.Evidence) (authorizer.Verdict, error) {
	callCtx, cancel := context.WithTimeout(ctx, s.spec.Timeout)
	defer cancel()
	inst, err := s.acquire(callCtx)
	if err != nil {
		return authorizer.Verdict{}, s.callError(ctx, callCtx, "start", err)
	}
	v, err := inst.rpc.Authorize(callCtx, ev)
	if err == nil {
		s.succeeded(inst)
		return v, nil
	}
	switch {
	case ctx.Err() != nil:
		// The caller gave up (the broker is stopping, the child left): the
		// plugin is not at fault and keeps running.
	case isPluginError(err):
		// The plugin's own Authorize returned an error: it is working, it
		// just could not judge this ask.
	default:
		s.retire(inst, err)
	}
	return authorizer.Verdict{}, s.callError(ctx, callCtx, "call", err)
}

// callError classifies a failed call with the sentinels of package chain
// (and authorizer.ErrInvalidVerdict).
func (s *supervised) callError(ctx, callCtx context.Context, what string, err error) error {
	switch {
	case errors.Is(err, chain.ErrClosed), errors.Is(err, authorizer.ErrInvalidVerdict), errors.Is(err, chain.ErrUnavailable):
		return fmt.Errorf("authorizer %q: %w", s.spec.Name, err)
	case ctx.Err() != nil:
		return fmt.Errorf("authorizer %q: %s: %w", s.spec.Name, what, ctx.Err())
	case errors.Is(callCtx.Err(), context.DeadlineExceeded), status.Code(err) == codes.DeadlineExceeded:
		// The deadline travels to the plugin, whose side may report it
		// before the broker's own timer fires.
		return fmt.Errorf("authorizer %q: %s: %w after %v", s.spec.Name, what, chain.ErrTimeout, s.spec.Timeout)
	case isPluginError(err):
		return fmt.Errorf("authorizer %q: plugin error: %s", s.spec.Name, capRunes(sanitize(status.Convert(err).Message()), 300))
	}
	return fmt.Errorf("authorizer %q: %s: %w: %s", s.spec.Name, what, chain.ErrUnavailable, capRunes(err.Error(), 300))
}

// isPluginError reports whether err is the plugin's own error from its
// handler (gRPC status Unknown) rather than a transport or protocol
// failure.
func isPluginError(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.Unknown
}

// acquire returns the running process, or starts one and waits for it as
// long as ctx allows. Every caller waiting on one start shares its result.
func (s *supervised) acquire(ctx context.Context) (*instance, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, chain.ErrClosed
		}
		if inst := s.cur; inst != nil {
			if !inst.client.Exited() {
				s.mu.Unlock()
				return inst, nil
			}
			// It died between asks; a restart is not this ask's failure.
			s.retireLocked(inst, errors.New("plugin process exited"))
			s.mu.Unlock()
			continue
		}
		a := s.attempt
		if a == nil {
			if wait := time.Until(s.notBefore); wait > 0 {
				err := fmt.Errorf("%w: restart backing off for %v after %d failures (last: %v)",
					chain.ErrUnavailable, wait.Round(time.Millisecond), s.failures, s.lastErr)
				s.mu.Unlock()
				return nil, err
			}
			a = s.startLocked()
		}
		s.mu.Unlock()
		select {
		case <-a.done:
			if a.err != nil {
				return nil, a.err
			}
			return a.inst, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// startLocked begins a start in the background. Called with s.mu held.
func (s *supervised) startLocked() *startAttempt {
	s.gen++
	a := &startAttempt{done: make(chan struct{})}
	s.attempt = a
	gen := s.gen
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		inst, err := s.start(gen)
		s.mu.Lock()
		s.attempt = nil
		switch {
		case err != nil:
			s.failedLocked(err)
			a.err = err
		case s.closed:
			a.err = chain.ErrClosed
			s.killLater(inst, false)
		default:
			s.cur = inst
			a.inst = inst
		}
		close(a.done)
		s.mu.Unlock()
		if err != nil {
			s.logger.Error().Err(err).Uint64("generation", gen).Msg("authorizer plugin did not start")
		}
	}()
	return a
}

// start runs one plugin process through the handshake and a Describe.
func (s *supervised) start(gen uint64) (*instance, error) {
	logger := s.logger.With().Uint64("generation", gen).Logger()
	out := newPluginOutput(logger)
	inst := &instance{gen: gen, out: out}
	stderr, syncOut, syncErr := out.stream("stderr", true), out.stream("stdout", false), out.stream("stderr", false)
	inst.streams = []*lineSplitter{stderr, syncOut, syncErr}

	inst.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: protocol.Handshake,
		Plugins:         protocol.PluginSet(nil),
		RunnerFunc: func(_ hclog.Logger, tmpl *exec.Cmd, socketDir string) (runner.Runner, error) {
			p, err := newProcRunner(s.spec.Path, s.spec.SHA256, s.spec.Args, tmpl.Env, socketDir, s.fork.do, s.opts.Confinement, s.spec.Network)
			inst.proc = p
			return p, err
		},
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: s.opts.tempDir()},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     s.opts.startTimeout(),
		Managed:          false,
		Logger:           newHCLogBridge(logger.With().Str("component", "go-plugin").Logger(), filepath.Base(s.spec.Path)),
		Stderr:           stderr,
		SyncStdout:       syncOut,
		SyncStderr:       syncErr,
		GRPCDialOptions: []grpc.DialOption{
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxReplyBytes)),
		},
	})
	fail := func(err error) (*instance, error) {
		s.kill(inst, false)
		if tail := out.Tail(); tail != "" {
			err = fmt.Errorf("%w (plugin stderr: %s)", err, tail)
		}
		return nil, err
	}
	// failStart explains a failed handshake or first call: after the
	// kill, so the stderr tail holds all the plugin said.
	failStart := func(explain func(tail string) *startError) (*instance, error) {
		s.kill(inst, false)
		return nil, explain(out.Tail())
	}
	rpcClient, err := inst.client.Client()
	if err != nil {
		if errors.Is(err, ErrChecksum) || errors.Is(err, ErrBinary) {
			return fail(fmt.Errorf("%w: %w", chain.ErrUnavailable, err))
		}
		return failStart(func(tail string) *startError {
			var stdout *firstLine
			if inst.proc != nil {
				stdout = inst.proc.stdout
			}
			return explainStart(err, stdout, inst.proc, s.opts.startTimeout(), tail)
		})
	}
	raw, err := rpcClient.Dispense(protocol.PluginName)
	if err != nil {
		return fail(fmt.Errorf("%w: dispense: %w", chain.ErrUnavailable, err))
	}
	pc, ok := raw.(*protocol.Client)
	if !ok {
		return fail(fmt.Errorf("%w: dispensed %T", chain.ErrUnavailable, raw))
	}
	inst.rpc = pc
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.startTimeout())
	defer cancel()
	desc, err := pc.Describe(ctx)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", errDescribeTimeout, err)
		}
		return failStart(func(tail string) *startError {
			return explainConnect(err, inst.proc.stdout, s.opts.startTimeout(), tail)
		})
	}
	logger.Info().Str("plugin", capRunes(sanitize(desc.Name), 100)).Str("version", capRunes(sanitize(desc.Version), 100)).
		Str("pid", inst.proc.ID()).Msg("authorizer plugin started")
	return inst, nil
}

// succeeded records a good answer: the backoff starts over.
func (s *supervised) succeeded(inst *instance) {
	s.mu.Lock()
	if s.cur == inst {
		s.failures = 0
	}
	s.mu.Unlock()
}

// retire takes a failed process out of service and kills it. Only the
// first of several concurrent failures of one process does anything: the
// others find it already replaced (the generation check).
func (s *supervised) retire(inst *instance, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retireLocked(inst, cause)
}

func (s *supervised) retireLocked(inst *instance, cause error) {
	if s.cur != inst {
		return
	}
	s.cur = nil
	s.failedLocked(cause)
	s.logger.Warn().Uint64("generation", inst.gen).Str("cause", capRunes(cause.Error(), 300)).
		Msg("authorizer plugin retired; the next ask starts a fresh process")
	s.killLater(inst, false)
}

// failedLocked counts a failure and sets the backoff: none for the first,
// then BackoffBase doubling up to BackoffMax.
func (s *supervised) failedLocked(err error) {
	s.failures++
	s.lastErr = err
	wait := time.Duration(0)
	if s.failures > 1 {
		wait = s.opts.backoffBase() << min(s.failures-2, 20)
		wait = min(wait, s.opts.backoffMax())
	}
	s.notBefore = time.Now().Add(wait)
}

// killLater kills inst in the background. Called with s.mu held.
func (s *supervised) killLater(inst *instance, graceful bool) {
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.kill(inst, graceful)
	}()
}

// gracefulStop is how long a plugin asked to shut down has before it is
// killed, with its whole tree: the broker's stop leaves no plugin process
// behind within a second, whatever the plugin does with the request.
const gracefulStop = 500 * time.Millisecond

// kill ends one process and waits for go-plugin's goroutines. A failed
// process is SIGKILLed first (group and all); a graceful kill asks the
// plugin to shut down and gives it gracefulStop (go-plugin alone would
// give two seconds).
func (s *supervised) kill(inst *instance, graceful bool) {
	if !graceful && inst.proc != nil {
		if err := inst.proc.Kill(context.Background()); err != nil {
			s.logger.Warn().Err(err).Msg("kill authorizer plugin")
		}
	}
	if graceful && inst.proc != nil {
		t := time.AfterFunc(gracefulStop, func() { _ = inst.proc.Kill(context.Background()) })
		defer t.Stop()
	}
	inst.client.Kill()
	if inst.proc != nil {
		// The group may hold helpers that survived the leader.
		_ = inst.proc.Kill(context.Background())
	}
	for _, st := range inst.streams {
		st.flush()
	}
}

// Close kills the plugin process, gracefully, and waits for every start
// and kill in flight. It implements io.Closer for chain.Close.
func (s *supervised) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	inst := s.cur
	s.cur = nil
	s.mu.Unlock()
	if inst != nil {
		s.kill(inst, true)
	}
	s.bg.Wait()
	s.fork.stop()
	return nil
}

// generation reports how many processes the link has started.
func (s *supervised) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// sanitize makes untrusted text one line of printable characters: no
// C0 or C1 controls (ESC and the 8-bit CSI start terminal sequences) and
// no bidi controls (which reorder what the operator reads).
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r < 0x20, r >= 0x7f && r <= 0x9f,
			r == 0x061c, r == 0x200e, r == 0x200f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

// disabledLink stands in for a link that could not be loaded: every ask
// fails with chain.ErrDisabled, so it gets the link's failure verdict.
type disabledLink struct {
	name string
	err  error
}

func (d disabledLink) Name() string { return d.name }

func (d disabledLink) Authorize(context.Context, authorizer.Evidence) (authorizer.Verdict, error) {
	return authorizer.Verdict{}, fmt.Errorf("authorizer %q: %w: %w", d.name, chain.ErrDisabled, d.err)
}

// ensure the types satisfy the chain's interfaces.
var (
	_ chain.Link = (*supervised)(nil)
	_ chain.Link = disabledLink{}
)
