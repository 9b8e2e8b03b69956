// Package protocol is the contract between courier's broker and its
// authorizer plugins: the go-plugin handshake, the plugin set, and the gRPC
// glue that carries [authorizer.Evidence] to a plugin and its
// [authorizer.Verdict] back. The wire is
// plugins/proto/courier/authorizer/v1/authorizer.proto, which documents the
// contract for authors in other languages; this package converts between it
// and package authorizer's types, once on each side.
//
// A Go plugin author needs none of this directly: package plugins/sdk
// serves an [Authorizer] with one call. The broker side (starting,
// supervising and killing plugin processes) is package plugins.
//
// # Versions
//
// [ProtocolVersion] is the application protocol version, negotiated by
// go-plugin through PLUGIN_PROTOCOL_VERSIONS. A change that an existing
// plugin would misread gets a new version and a new proto package
// (courier.authorizer.v2); adding optional fields does not.
package protocol

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seed6639df8c/courier/authorizer"
	pb "github.com/seed6639df8c/courier/plugins/gen/courier/authorizer/v1"
)

// ProtocolVersion is the application protocol this package speaks.
const ProtocolVersion = 1

// PluginName is the name of the one plugin a binary serves.
const PluginName = "authorizer"

// Handshake is the go-plugin handshake both sides use. The cookie is not a
// security measure: it only keeps a plugin binary that someone runs by hand
// from waiting for a broker that will never come.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "COURIER_AUTHORIZER_PLUGIN",
	MagicCookieValue: "8c1f3c0e-courier-authorizer",
}

// Authorizer is what a plugin implements: it judges one ask.
//
// Authorize must honour ctx: the broker cancels it at the link's deadline
// and counts a late answer as a failure. An error means "could not judge";
// the broker then applies the link's failure verdict (deny or defer), so
// return an error rather than a guess. Authorize is called concurrently.
type Authorizer interface {
	Authorize(ctx context.Context, ev authorizer.Evidence) (authorizer.Verdict, error)
}

// Describer is implemented by an Authorizer that names itself; one that
// does not is described by its binary's name.
type Describer interface {
	Describe(ctx context.Context) (Description, error)
}

// HealthChecker is implemented by an Authorizer that can tell whether it
// is able to answer now (a model judge whose API key is missing is not).
type HealthChecker interface {
	Health(ctx context.Context) error
}

// Description names a plugin in the broker's logs.
type Description struct {
	Name    string
	Version string
	Summary string
}

// PluginSet is the go-plugin plugin set of one authorizer. The plugin side
// passes its implementation; the broker side passes nil.
func PluginSet(impl Authorizer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}}
}

// GRPCPlugin is the go-plugin binding of an Authorizer, gRPC only.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the plugin side's implementation, nil on the broker side.
	Impl Authorizer
	// Name describes the plugin when Impl is not a Describer.
	Name string
}

// GRPCServer registers the AuthorizerService on the plugin side.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("protocol: no authorizer to serve")
	}
	pb.RegisterAuthorizerServiceServer(s, &server{impl: p.Impl, name: p.Name})
	return nil
}

// GRPCClient returns a *Client on the broker side.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Client{rpc: pb.NewAuthorizerServiceClient(conn)}, nil
}

// Client calls a plugin's AuthorizerService. It implements Authorizer,
// Describer and HealthChecker; every call is bounded by its ctx only.
type Client struct {
	rpc pb.AuthorizerServiceClient
}

// Authorize sends ev and reads the verdict. An answer that is not one of
// the three verdicts is an error wrapping authorizer.ErrInvalidVerdict.
func (c *Client) Authorize(ctx context.Context, ev authorizer.Evidence) (authorizer.Verdict, error) {
	resp, err := c.rpc.Authorize(ctx, &pb.AuthorizeRequest{Evidence: EncodeEvidence(ev)})
	if err != nil {
		return authorizer.Verdict{}, err
	}
	return DecodeVerdict(resp)
}

// Describe asks the plugin to name itself.
func (c *Client) Describe(ctx context.Context) (Description, error) {
	resp, err := c.rpc.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return Description{}, err
	}
	return Description{Name: resp.GetName(), Version: resp.GetVersion(), Summary: resp.GetSummary()}, nil
}

// Health asks the plugin whether it can answer now.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.rpc.Health(ctx, &pb.HealthRequest{})
	return err
}

// server adapts an Authorizer to the generated service.
type server struct {
	pb.UnimplementedAuthorizerServiceServer
	impl Authorizer
	name string
}

// Authorize runs the implementation. A panic is recovered into an Internal
// error, which the broker counts as a failure and answers by restarting the
// process: grpc-go would otherwise let the panic kill the plugin.
func (s *server) Authorize(ctx context.Context, req *pb.AuthorizeRequest) (resp *pb.AuthorizeResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(codes.Internal, "authorizer panicked: %v\n%s", r, debug.Stack())
		}
	}()
	v, err := s.impl.Authorize(ctx, DecodeEvidence(req.GetEvidence()))
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return nil, err
		}
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return EncodeVerdict(v), nil
}

func (s *server) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	d := Description{Name: s.name}
	if desc, ok := s.impl.(Describer); ok {
		var err error
		if d, err = desc.Describe(ctx); err != nil {
			return nil, status.Error(codes.Unknown, err.Error())
		}
	}
	return &pb.DescribeResponse{Name: d.Name, Version: d.Version, Summary: d.Summary}, nil
}

func (s *server) Health(ctx context.Context, _ *pb.HealthRequest) (*pb.HealthResponse, error) {
	if hc, ok := s.impl.(HealthChecker); ok {
		if err := hc.Health(ctx); err != nil {
			return nil, status.Error(codes.Unavailable, err.Error())
		}
	}
	return &pb.HealthResponse{}, nil
}

// EncodeVerdict is v on the wire: its kind, the reason of a deny or a
// defer, its code and its metadata (an allow's reason is not sent). A Kind
// outside the three is sent as VERDICT_UNSPECIFIED, which the broker
// refuses. Strings are sent as valid UTF-8, as protobuf requires, so a
// model's stray bytes cannot make the call fail.
func EncodeVerdict(v authorizer.Verdict) *pb.AuthorizeResponse {
	out := &pb.AuthorizeResponse{Code: validUTF8(v.Code)}
	if v.Meta != (authorizer.Meta{}) {
		out.Meta = &pb.Meta{
			Model: validUTF8(v.Meta.Model), PromptVersion: validUTF8(v.Meta.PromptVersion),
			InputTokens: v.Meta.InputTokens, OutputTokens: v.Meta.OutputTokens, LatencyMs: v.Meta.LatencyMs,
		}
	}
	switch v.Kind {
	case authorizer.Allow:
		out.Verdict = pb.Verdict_VERDICT_ALLOW
	case authorizer.Deny:
		out.Verdict, out.Reason = pb.Verdict_VERDICT_DENY, validUTF8(v.Reason)
	case authorizer.Defer:
		out.Verdict, out.Reason = pb.Verdict_VERDICT_DEFER, validUTF8(v.Reason)
	default:
		return &pb.AuthorizeResponse{Verdict: pb.Verdict_VERDICT_UNSPECIFIED}
	}
	return out
}

// DecodeVerdict reads a plugin's answer. VERDICT_UNSPECIFIED, an unknown
// value or a nil response is an error wrapping authorizer.ErrInvalidVerdict.
// The reason, code and metadata are passed on raw; the chain cleans and
// bounds them (authorizer.CleanReason, CleanCode, CleanMeta).
func DecodeVerdict(resp *pb.AuthorizeResponse) (authorizer.Verdict, error) {
	v := authorizer.Verdict{Code: resp.GetCode()}
	if m := resp.GetMeta(); m != nil {
		v.Meta = authorizer.Meta{
			Model: m.GetModel(), PromptVersion: m.GetPromptVersion(),
			InputTokens: m.GetInputTokens(), OutputTokens: m.GetOutputTokens(), LatencyMs: m.GetLatencyMs(),
		}
	}
	switch k := resp.GetVerdict(); k {
	case pb.Verdict_VERDICT_ALLOW:
		v.Kind = authorizer.Allow
	case pb.Verdict_VERDICT_DENY:
		v.Kind, v.Reason = authorizer.Deny, resp.GetReason()
	case pb.Verdict_VERDICT_DEFER:
		v.Kind, v.Reason = authorizer.Defer, resp.GetReason()
	default:
		return authorizer.Verdict{}, fmt.Errorf("%w: %d", authorizer.ErrInvalidVerdict, int32(k))
	}
	return v, nil
}
