// Command rawplugin is an authorizer plugin written from docs/PLUGINS.md
// alone: it does not use go-plugin or courier's SDK, only gRPC, the
// generated AuthorizerService and grpc.health.v1, the way a plugin in
// another language would. With --mode ok (the default) it follows the
// contract; every other mode breaks one rule of the handshake, so the
// tests of package plugins can check that the broker names each mistake:
//
//	ok          the contract; verdict by display value: allow, deny, else defer
//	exit        print a line on stderr and exit 3 before the handshake
//	silent      print nothing and wait
//	garbage     print a line on stdout before the handshake
//	core        go-plugin core protocol 2 in the first field
//	version     courier protocol 9 in the second field
//	network     "pipe" as the network
//	netrpc      only four fields (go-plugin then assumes net/rpc)
//	padded      the certificate in base64 with padding
//	nocert      no certificate field
//	notcert     a base64 field that is not a certificate
//	plaintext   serve gRPC without TLS
//	wronghost   a certificate for plugin.example, not localhost
//	noalpn      TLS without ALPN "h2"
//	badaddr     print the address of a socket nobody listens on
//	nodescribe  no AuthorizerService
//	nohealth    no grpc.health.v1 service
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "github.com/seed6639df8c/courier/plugins/gen/courier/authorizer/v1"
)

type service struct {
	pb.UnimplementedAuthorizerServiceServer
}

func (service) Authorize(_ context.Context, req *pb.AuthorizeRequest) (*pb.AuthorizeResponse, error) {
	switch req.GetEvidence().GetDisplayValue() {
	case "allow":
		return &pb.AuthorizeResponse{Verdict: pb.Verdict_VERDICT_ALLOW}, nil
	case "deny":
		return &pb.AuthorizeResponse{Verdict: pb.Verdict_VERDICT_DENY, Reason: "denied by rawplugin"}, nil
	}
	return &pb.AuthorizeResponse{Verdict: pb.Verdict_VERDICT_DEFER}, nil
}

func (service) Describe(context.Context, *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	return &pb.DescribeResponse{Name: "rawplugin", Version: "1"}, nil
}

func (service) Health(context.Context, *pb.HealthRequest) (*pb.HealthResponse, error) {
	return &pb.HealthResponse{}, nil
}

func main() {
	mode := flag.String("mode", "ok", "which rule to break")
	flag.Parse()
	if err := run(*mode); err != nil {
		fmt.Fprintf(os.Stderr, "rawplugin: %v\n", err)
		os.Exit(1)
	}
}

func run(mode string) error {
	if os.Getenv("COURIER_AUTHORIZER_PLUGIN") != "8c1f3c0e-courier-authorizer" {
		return fmt.Errorf("this is a courier authorizer plugin: the broker starts it")
	}
	if !contains(strings.Split(os.Getenv("PLUGIN_PROTOCOL_VERSIONS"), ","), "1") {
		return fmt.Errorf("the broker does not speak protocol 1 (PLUGIN_PROTOCOL_VERSIONS=%q)", os.Getenv("PLUGIN_PROTOCOL_VERSIONS"))
	}
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "rawplugin: cannot read my settings")
		os.Exit(3)
	case "silent":
		waitForSignal()
		return nil
	case "garbage":
		fmt.Println("rawplugin starting up")
	}
	host := "localhost"
	if mode == "wronghost" {
		host = "plugin.example"
	}
	cert, der, err := serverCert(host, mode == "padded")
	if err != nil {
		return err
	}
	clients := x509.NewCertPool()
	if !clients.AppendCertsFromPEM([]byte(os.Getenv("PLUGIN_CLIENT_CERT"))) {
		return fmt.Errorf("PLUGIN_CLIENT_CERT holds no PEM certificate")
	}
	tlsConf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clients,
		MinVersion:   tls.VersionTLS12,
	}
	dir := os.Getenv("PLUGIN_UNIX_SOCKET_DIR")
	sock := filepath.Join(dir, "rawplugin.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	var opts []grpc.ServerOption
	switch mode {
	case "plaintext":
	case "noalpn":
		// TLS ends at the listener, which offers no ALPN: gRPC runs
		// inside as if in plain text.
		lis = tls.NewListener(lis, tlsConf)
	default:
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConf)))
	}
	srv := grpc.NewServer(opts...)
	if mode != "nodescribe" {
		pb.RegisterAuthorizerServiceServer(srv, service{})
	}
	if mode != "nohealth" {
		hs := health.NewServer()
		hs.SetServingStatus("plugin", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(srv, hs)
	}
	go func() { _ = srv.Serve(lis) }()

	certField := base64.RawStdEncoding.EncodeToString(der)
	fields := []string{"1", "1", "unix", sock, "grpc", certField}
	switch mode {
	case "core":
		fields[0] = "2"
	case "version":
		fields[1] = "9"
	case "network":
		fields[2] = "pipe"
	case "netrpc":
		fields = fields[:4]
	case "padded":
		fields[5] = base64.StdEncoding.EncodeToString(der)
	case "nocert":
		fields = fields[:5]
	case "notcert":
		fields[5] = base64.RawStdEncoding.EncodeToString([]byte(strings.Repeat("not a certificate ", 8)))
	case "badaddr":
		fields[3] = filepath.Join(dir, "nobody.sock")
	}
	fmt.Println(strings.Join(fields, "|"))
	waitForSignal()
	srv.Stop()
	return nil
}

// serverCert is a self-signed certificate for host, valid for a day. With
// padded, it is made again until its DER length is not a multiple of 3,
// so that standard base64 needs padding.
func serverCert(host string, padded bool) (tls.Certificate, []byte, error) {
	for {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return tls.Certificate{}, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(time.Now().UnixNano()),
			Subject:      pkix.Name{CommonName: host},
			DNSNames:     []string{host},
			NotBefore:    time.Now().Add(-time.Minute),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			return tls.Certificate{}, nil, err
		}
		if padded && len(der)%3 == 0 {
			continue
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, der, nil
	}
}

// waitForSignal returns when the broker asks the plugin to stop; it kills
// the plugin otherwise.
func waitForSignal() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, os.Interrupt)
	<-c
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}
