package rules

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestAuthorizerChainParsed(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "config", "authorizer-chain-ok.json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse("config.json", data)
	if err != nil {
		t.Fatal(err)
	}
	want := []AuthorizerLink{
		{
			Name: "denylist", Path: "/opt/courier/courier-authz-denylist",
			SHA256: "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
			Args:   []string{"--deny", `rm\s+-rf`}, Timeout: 2 * time.Second,
			OnFailure: LinkFailDeny, Mode: LinkEnforce, At: "config.json:4:5",
		},
		{
			Name: "judge.v2", Path: "/opt/courier/judge",
			SHA256:  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			Timeout: DefaultLinkTimeout, OnFailure: LinkFailDefer, Mode: LinkShadow,
			DiscloseCwd: true, DisclosePrincipal: true, DiscloseConversation: true, Network: true, At: "config.json:7:5",
		},
	}
	if !reflect.DeepEqual(cfg.AuthorizerChain, want) {
		t.Errorf("got  %+v\nwant %+v", cfg.AuthorizerChain, want)
	}
}

func TestAuthorizerChainDefaults(t *testing.T) {
	cfg, err := Parse("c.json", []byte(`{"permission": {}}`))
	if err != nil || cfg.AuthorizerChain != nil {
		t.Fatalf("no key: %+v, %v; want no links", cfg.AuthorizerChain, err)
	}
	cfg, err = Parse("c.json", []byte(`{"permission": {}, "authorizerChain": [{"name": "a", "path": "/a", "sha256": "`+
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"+`"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	l := cfg.AuthorizerChain[0]
	if l.Timeout != DefaultLinkTimeout || l.OnFailure != LinkFailDeny || l.Mode != LinkEnforce ||
		l.DiscloseCwd || l.DisclosePrincipal || l.DiscloseConversation || l.Network || l.Args != nil {
		t.Errorf("defaults = %+v: want 5s, deny on failure, enforce, nothing disclosed, no network", l)
	}
}
