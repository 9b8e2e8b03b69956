package plugins

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/seed6639df8c/courier/rules"
)

// Sum returns the SHA-256 (hex) of the plugin binary at path, after the
// checks Load makes before it runs one: a regular executable file that
// only its owner (this user or root) may write, in a directory others
// cannot write. A binary that fails them could not be pinned usefully:
// the broker would disable its link.
func Sum(path string) (string, error) {
	f, err := openChecked(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sum, err := sumOf(f, path)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum), nil
}

// CheckResult is what CheckLink found of one link.
type CheckResult struct {
	// Plugin, Version are what the plugin's Describe said (sanitized).
	Plugin, Version string
	// AuthorizerHealth is false when the plugin does not implement
	// AuthorizerService.Health (it is optional; the gRPC health service
	// is not).
	AuthorizerHealth bool
}

// CheckLink starts link's plugin as the broker would (verified against
// its pin, confined by opts.Confinement, through the handshake and a
// Describe), asks the gRPC health service ("plugin") and, when the plugin
// implements it, AuthorizerService.Health, then stops it. The error says
// what failed: it wraps ErrBinary or ErrChecksum for the binary and its
// pin, and is a start failure's explanation otherwise.
func CheckLink(ctx context.Context, link rules.AuthorizerLink, opts Options) (CheckResult, error) {
	var res CheckResult
	f, err := openVerified(link.Path, link.SHA256)
	if err != nil {
		return res, err
	}
	f.Close()
	sup := newSupervised(link, opts)
	defer sup.Close()
	inst, err := sup.acquire(ctx)
	if err != nil {
		return res, err
	}
	desc, err := inst.rpc.Describe(ctx)
	if err != nil {
		return res, fmt.Errorf("describe: %w", err)
	}
	res.Plugin, res.Version = capRunes(sanitize(desc.Name), 100), capRunes(sanitize(desc.Version), 100)
	cp, err := inst.client.Client()
	if err != nil {
		return res, err
	}
	gc, ok := cp.(*plugin.GRPCClient)
	if !ok {
		return res, fmt.Errorf("the plugin is not served over gRPC (%T)", cp)
	}
	hctx, cancel := context.WithTimeout(ctx, link.Timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(gc.Conn).Check(hctx, &healthpb.HealthCheckRequest{Service: plugin.GRPCServiceName})
	switch {
	case status.Code(err) == codes.Unimplemented:
		return res, errors.New(`the plugin does not serve grpc.health.v1.Health: it must answer Check for service "plugin" with SERVING`)
	case err != nil:
		return res, fmt.Errorf(`the gRPC health check (service "plugin") failed: %s`, capRunes(sanitize(err.Error()), 300))
	case resp.GetStatus() != healthpb.HealthCheckResponse_SERVING:
		return res, fmt.Errorf(`the gRPC health check (service "plugin") answered %v, want SERVING`, resp.GetStatus())
	}
	err = inst.rpc.Health(hctx)
	switch {
	case status.Code(err) == codes.Unimplemented:
	case err != nil:
		return res, fmt.Errorf("the plugin says it cannot answer now (AuthorizerService.Health): %s", capRunes(sanitize(status.Convert(err).Message()), 300))
	default:
		res.AuthorizerHealth = true
	}
	return res, nil
}
