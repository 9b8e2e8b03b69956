"""Serve a courier authorizer plugin from Python.

This module is the part of a courier plugin that does not depend on what it
judges: go-plugin's handshake with automatic mutual TLS, the services the
broker calls besides courier.authorizer.v1.AuthorizerService, and the
process rules (stdout holds the handshake line and nothing before it, logs
go to stderr as hclog JSON lines). docs/PLUGINS.md is the contract it
implements; the comments below say which rule each step follows.

It imports the Python code that protoc generates from plugins/proto
(courier/authorizer/v1, goplugin, grpc_health/v1) as top-level packages, so
those must be on sys.path: build.py puts them, this module and the plugin's
main module into one executable zip, which is what the broker runs and pins.
Nothing here looks for files relative to its own path: the broker executes
the plugin as /proc/self/fd/3.
"""

import base64
import datetime
import json
import os
import signal
import sys
import threading
from concurrent import futures

import grpc
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from courier.authorizer.v1 import authorizer_pb2, authorizer_pb2_grpc
from goplugin import grpc_controller_pb2, grpc_controller_pb2_grpc
from goplugin import grpc_stdio_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

# The handshake courier's broker expects (plugins/protocol.Handshake).
MAGIC_COOKIE_KEY = "COURIER_AUTHORIZER_PLUGIN"
MAGIC_COOKIE_VALUE = "8c1f3c0e-courier-authorizer"
CORE_PROTOCOL_VERSION = 1  # go-plugin's own protocol
APP_PROTOCOL_VERSION = 1  # courier.authorizer.v1

# go-plugin's health check names this service.
HEALTH_SERVICE = "plugin"

# The broker caps replies at 1 MiB; it never sends more than that either.
MAX_MESSAGE_BYTES = 1 << 20

ALLOW = authorizer_pb2.VERDICT_ALLOW
DENY = authorizer_pb2.VERDICT_DENY
DEFER = authorizer_pb2.VERDICT_DEFER


class PluginError(Exception):
    """A reason the plugin cannot serve; main reports it and exits."""


def log(level, message, **fields):
    """Write one hclog-shaped JSON line to stderr, where the broker reads
    plugin logs (type-checked, capped, rate-limited)."""
    entry = {
        "@level": level,
        "@message": message,
        "@timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    }
    entry.update(fields)
    sys.stderr.write(json.dumps(entry) + "\n")
    sys.stderr.flush()


def candidates(evidence):
    """The values of an ask a deny-list judges, as the Go example does: the
    child-fixed match values, every asking unit's command, the boundary
    path, then the display value."""
    out = []
    if evidence.HasField("access"):
        access = evidence.access
        out.extend(access.match_values)
        out.extend(unit.command for unit in access.asking_units)
        # proto3 optional: unset and "" are different answers.
        if access.HasField("boundary_value"):
            out.append(access.boundary_value)
    if evidence.display_value:
        out.append(evidence.display_value)
    return out


def envelope_surface(evidence):
    """The surface the broker's delegation envelope judges: the gate surface
    of the access facts, else the display surface."""
    if evidence.HasField("access") and evidence.access.surface.strip():
        return evidence.access.surface
    return evidence.display_surface


class _Authorizer(authorizer_pb2_grpc.AuthorizerServiceServicer):
    """Adapts an authorizer object to the AuthorizerService."""

    def __init__(self, impl):
        self._impl = impl

    def Authorize(self, request, context):
        verdict, reason = self._impl.authorize(request.evidence)
        if verdict not in (ALLOW, DENY, DEFER):
            # An unspecified verdict is a failure on the broker's side
            # anyway; say so here too.
            context.abort(grpc.StatusCode.INTERNAL, "authorizer returned no verdict")
        return authorizer_pb2.AuthorizeResponse(verdict=verdict, reason=reason or "")

    def Describe(self, request, context):
        name, version, summary = self._impl.describe()
        return authorizer_pb2.DescribeResponse(name=name, version=version, summary=summary)

    def Health(self, request, context):
        return authorizer_pb2.HealthResponse()


class _Health(health_pb2_grpc.HealthServicer):
    """grpc.health.v1: go-plugin pings service "plugin"."""

    def Check(self, request, context):
        if request.service not in ("", HEALTH_SERVICE):
            context.abort(grpc.StatusCode.NOT_FOUND, "unknown service")
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


class _Controller(grpc_controller_pb2_grpc.GRPCControllerServicer):
    """plugin.GRPCController: the broker's normal stop."""

    def __init__(self, stopping):
        self._stopping = stopping

    def Shutdown(self, request, context):
        # Answer first; the main thread stops the server and exits.
        self._stopping.set()
        return grpc_controller_pb2.Empty()


class _Stdio(grpc_stdio_pb2_grpc.GRPCStdioServicer):
    """plugin.GRPCStdio: kept open and silent until the call or the plugin
    ends. This plugin's stderr already reaches the broker; answering at all
    saves a "stdio service not available" warning per start."""

    def __init__(self, stopping):
        self._stopping = stopping

    def StreamStdio(self, request, context):
        done = threading.Event()
        context.add_callback(done.set)
        # Wake on the plugin's shutdown too: the event cannot be chained, so
        # a helper thread forwards it (daemon: it dies with the process).
        threading.Thread(target=lambda: (self._stopping.wait(), done.set()), daemon=True).start()
        done.wait()
        return
        yield  # a generator: a stream with no messages


def _server_certificate():
    """A fresh self-signed certificate for "localhost", as go-plugin's
    client verifies it (ServerName "localhost", the certificate itself as
    the only root). Returns (key PEM, certificate PEM, certificate DER)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(seconds=30))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                crl_sign=False, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return key_pem, cert.public_bytes(serialization.Encoding.PEM), cert.public_bytes(serialization.Encoding.DER)


def _negotiate(environ):
    """Checks the broker's environment; returns the client certificate PEM
    and the directory for the socket."""
    if environ.get(MAGIC_COOKIE_KEY) != MAGIC_COOKIE_VALUE:
        raise PluginError(
            "this is a courier authorizer plugin: courier's broker starts it "
            "(configure it in authorizerChain); it is not meant to be run by hand"
        )
    offered = [v.strip() for v in environ.get("PLUGIN_PROTOCOL_VERSIONS", "").split(",")]
    if str(APP_PROTOCOL_VERSION) not in offered:
        raise PluginError(
            "the broker offers protocol versions %r; this plugin speaks %d"
            % (environ.get("PLUGIN_PROTOCOL_VERSIONS", ""), APP_PROTOCOL_VERSION)
        )
    client_cert = environ.get("PLUGIN_CLIENT_CERT", "")
    if not client_cert:
        # The broker always uses go-plugin's AutoMTLS; serving in clear
        # would let anything that reaches the socket ask for verdicts.
        raise PluginError("PLUGIN_CLIENT_CERT is not set: refusing to serve without mutual TLS")
    sock_dir = environ.get("PLUGIN_UNIX_SOCKET_DIR") or environ.get("TMPDIR") or "/tmp"
    return client_cert.encode(), sock_dir


def serve(impl, environ=None):
    """Serve impl as a courier authorizer plugin until the broker stops it.

    impl has two methods:
      authorize(evidence) -> (verdict, reason): evidence is a
        courier.authorizer.v1.Evidence message; verdict is ALLOW, DENY or
        DEFER; reason is read with DENY only. An exception fails the call
        (the broker applies the link's failure verdict and keeps the
        process).
      describe() -> (name, version, summary)

    Returns the process exit status; a PluginError before the handshake is
    reported on stderr with status 1.
    """
    environ = os.environ if environ is None else environ
    try:
        client_cert, sock_dir = _negotiate(environ)
    except PluginError as err:
        sys.stderr.write("%s: %s\n" % (impl.describe()[0], err))
        return 1

    # The host owns our lifetime: an interrupt aimed at the operator's
    # terminal is not a reason to die mid-call (go-plugin's servers ignore
    # it too). The broker stops us with Shutdown, then SIGKILL.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    key_pem, cert_pem, cert_der = _server_certificate()
    credentials = grpc.ssl_server_credentials(
        [(key_pem, cert_pem)],
        # The broker's certificate is self-signed: it is its own root.
        root_certificates=client_cert,
        require_client_auth=True,
    )
    stopping = threading.Event()
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=16),
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    authorizer_pb2_grpc.add_AuthorizerServiceServicer_to_server(_Authorizer(impl), server)
    health_pb2_grpc.add_HealthServicer_to_server(_Health(), server)
    grpc_controller_pb2_grpc.add_GRPCControllerServicer_to_server(_Controller(stopping), server)
    grpc_stdio_pb2_grpc.add_GRPCStdioServicer_to_server(_Stdio(stopping), server)

    # A fresh name in the private directory the broker gave us.
    socket_path = os.path.join(sock_dir, "plugin-%d-%s.sock" % (os.getpid(), os.urandom(4).hex()))
    if server.add_secure_port("unix:" + socket_path, credentials) == 0:
        sys.stderr.write("%s: cannot listen on %s\n" % (impl.describe()[0], socket_path))
        return 1
    server.start()

    # The handshake line, the only thing ever written to stdout:
    # CORE|APP|NETWORK|ADDRESS|PROTOCOL|CERT, the certificate as base64 DER
    # in the standard alphabet WITHOUT padding (go-plugin decodes it with
    # RawStdEncoding: a trailing "=" is an error).
    cert_b64 = base64.b64encode(cert_der).decode("ascii").rstrip("=")
    sys.stdout.write(
        "%d|%d|unix|%s|grpc|%s\n" % (CORE_PROTOCOL_VERSION, APP_PROTOCOL_VERSION, socket_path, cert_b64)
    )
    sys.stdout.flush()
    log("info", "plugin serving", socket=socket_path)

    stopping.wait()
    server.stop(grace=0.2).wait(1)
    return 0
