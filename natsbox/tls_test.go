package natsbox

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPermissionsLayoutTLS runs the documented layout behind TLS with
// verified client certificates, the set-up the layout's comment asks for.
func TestPermissionsLayoutTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := writeCert(t, dir, "ca", nil, nil)
	writeCert(t, dir, "server", ca, caKey)
	writeCert(t, dir, "client", ca, caKey)
	layout, err := os.ReadFile("testdata/permissions.conf")
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "server.conf")
	tlsBlock := "tls {\n  cert_file: \"" + filepath.Join(dir, "server.pem") + "\"\n  key_file: \"" + filepath.Join(dir, "server-key.pem") +
		"\"\n  ca_file: \"" + filepath.Join(dir, "ca.pem") + "\"\n  verify: true\n}\n"
	if err := os.WriteFile(conf, append([]byte(tlsBlock), layout...), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startLayout(t, conf)
	url := srv.ClientURL()
	if !strings.HasPrefix(url, "tls://") {
		t.Fatalf("ClientURL = %q, want tls://", url)
	}
	tlsOpts := Options{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client-key.pem")}

	// Without a client certificate the handshake is refused.
	pw := filepath.Join(dir, "alice.pw")
	os.WriteFile(pw, []byte("alice-pw\n"), 0o600)
	ctx, cancel := context.WithTimeout(testCtx(t), 1500*time.Millisecond)
	defer cancel()
	if nc, err := Connect(ctx, Options{URL: url, User: "alice", PasswordFile: pw, CAFile: tlsOpts.CAFile}); err == nil {
		nc.Close()
		t.Fatal("Connect without a client certificate succeeded")
	} else {
		t.Logf("without a client certificate: %v", err)
	}
	checkLayoutPermissions(t, url, tlsOpts)
}

// writeCert writes name.pem and name-key.pem under dir: a CA when parent
// is nil, else a certificate for 127.0.0.1 and localhost signed by it.
func writeCert(t *testing.T, dir, name string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "courier test " + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	} else {
		signer, signerKey = parent, parentKey
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(file, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".pem", "CERTIFICATE", der)
	write(name+"-key.pem", "EC PRIVATE KEY", keyDER)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
