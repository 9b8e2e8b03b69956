package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestIsNATS(t *testing.T) {
	for _, tt := range []struct {
		transport string
		nats, err bool
	}{
		{"", false, false},
		{"file", false, false},
		{"nats://127.0.0.1:4222", true, false},
		{"tls://engine.example:4222,tls://other.example:4222", true, false},
		{"nats://alice:secret@engine:4222", true, false},
		{"http://engine:4222", false, true},
		{"mailbox", false, true},
	} {
		nats, err := isNATS(tt.transport)
		if nats != tt.nats || (err != nil) != tt.err {
			t.Errorf("isNATS(%q) = %v, %v; want %v, error %v", tt.transport, nats, err, tt.nats, tt.err)
		}
	}
}

func TestNATSOwner(t *testing.T) {
	for _, tt := range []struct {
		name      string
		flags     natsFlags
		transport string
		want      string
	}{
		{"flag wins", natsFlags{owner: "bob", user: "carol"}, "nats://alice:pw@h:4222", "bob"},
		{"user in the URL", natsFlags{user: "carol"}, "nats://alice:pw@h:4222,nats://h2:4222", "alice"},
		{"--nats-user", natsFlags{user: "carol"}, "nats://h:4222", "carol"},
		{"none", natsFlags{}, "nats://h:4222", ""},
		{"token only", natsFlags{}, "nats://:t0ken@h:4222", ""},
		{"a token is no owner", natsFlags{}, "nats://s3cr3t@h:4222", ""},
	} {
		got, err := natsOwner(tt.flags, tt.transport)
		if got != tt.want || (err != nil) != (tt.want == "") {
			t.Errorf("%s: natsOwner = %q, %v; want %q", tt.name, got, err, tt.want)
		}
		if err != nil && !strings.Contains(err.Error(), "--nats-owner") {
			t.Errorf("%s: the error does not say to give --nats-owner: %v", tt.name, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	got := redactURL("nats://alice:s3cret@h1:4222,tls://t0ken@h2:4222,nats://h3:4222")
	if want := "nats://h1:4222,tls://h2:4222,nats://h3:4222"; got != want {
		t.Errorf("redactURL = %q, want %q", got, want)
	}
	if got := redactURL("nats://a:%zz@h:1/x@y"); got != "nats://h:1/x@y" {
		t.Errorf("redactURL kept the user information of a URL that does not parse: %q", got)
	}
	if got := redactURL("nats://h:1"); got != "nats://h:1" {
		t.Errorf("redactURL changed a URL without user information: %q", got)
	}
}

// TestUnknownTransportIsAUsageError: a transport that is neither the
// mailbox nor NATS is exit 2, for ask and hook, from the flag or the
// environment.
func TestUnknownTransportIsAUsageError(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"ask flag", []string{"ask", "--transport", "http://x", "--session", "c", "--surface", "bash", "--value", "ls"}, nil},
		{"ask env", []string{"ask", "--session", "c", "--surface", "bash", "--value", "ls"}, map[string]string{envTransport: "carrier-pigeon"}},
		{"hook flag", []string{"hook", "claude-code", "--transport", "http://x"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tt.args, func(k string) string { return tt.env[k] }, strings.NewReader(""), &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), "--transport") {
				t.Fatalf("exit %d, stderr %q; want exit %d naming --transport", code, stderr.String(), exitUsage)
			}
		})
	}
}
