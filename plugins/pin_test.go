package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/rules"
)

const (
	oldSum = "1111111111111111111111111111111111111111111111111111111111111111"
	newSum = "2222222222222222222222222222222222222222222222222222222222222222"
)

func TestPinInConfig(t *testing.T) {
	e := PinEntry{Name: "judge", Path: "/opt/courier/judge", SHA256: newSum}
	for _, tc := range []struct {
		name, in string
		byName   bool
		want     string
		changed  string
	}{
		{
			name: "no chain: added after the last member, same indent",
			in:   "{\n    \"permission\": {\"*\": \"ask\"}\n}\n",
			want: "{\n    \"permission\": {\"*\": \"ask\"},\n    \"authorizerChain\": [\n      {\"name\": \"judge\", \"path\": \"/opt/courier/judge\", \"sha256\": \"" + newSum + "\"}\n    ]\n}\n",
		},
		{
			name: "empty chain",
			in:   "{\n  \"permission\": {},\n  \"authorizerChain\": []\n}\n",
			want: "{\n  \"permission\": {},\n  \"authorizerChain\": [\n    {\"name\": \"judge\", \"path\": \"/opt/courier/judge\", \"sha256\": \"" + newSum + "\"}\n  ]\n}\n",
		},
		{
			name: "by path: the sum changes, nothing else",
			in: "{\n  \"authorizerChain\": [\n    {\"name\": \"deny\",   \"path\": \"/opt/courier/judge\", \"args\": [\"--x\"],\n     \"sha256\": \"" + oldSum + "\", \"onFailure\": \"defer\"}\n  ],\n" +
				"  \"permission\": {\"*\": \"ask\"}\n}\n",
			want: "{\n  \"authorizerChain\": [\n    {\"name\": \"deny\",   \"path\": \"/opt/courier/judge\", \"args\": [\"--x\"],\n     \"sha256\": \"" + newSum + "\", \"onFailure\": \"defer\"}\n  ],\n" +
				"  \"permission\": {\"*\": \"ask\"}\n}\n",
			changed: `pinned link "deny"`,
		},
		{
			name: "by path: two links on one binary",
			in: "{\"permission\": {}, \"authorizerChain\": [{\"name\": \"a\", \"path\": \"/opt/courier/judge\", \"sha256\": \"" + oldSum + "\"}," +
				" {\"name\": \"b\", \"path\": \"/opt/courier/judge\", \"sha256\": \"" + oldSum + "\", \"mode\": \"shadow\"}]}",
			want: "{\"permission\": {}, \"authorizerChain\": [{\"name\": \"a\", \"path\": \"/opt/courier/judge\", \"sha256\": \"" + newSum + "\"}," +
				" {\"name\": \"b\", \"path\": \"/opt/courier/judge\", \"sha256\": \"" + newSum + "\", \"mode\": \"shadow\"}]}",
			changed: `pinned link "a", link "b"`,
		},
		{
			name:   "by name: path and sum change",
			in:     "{\"permission\": {}, \"authorizerChain\": [\n  {\"name\": \"judge\", \"path\": \"/old/judge\", \"sha256\": \"" + oldSum + "\"}\n]}",
			byName: true,
			want:   "{\"permission\": {}, \"authorizerChain\": [\n  {\"name\": \"judge\", \"path\": \"/opt/courier/judge\", \"sha256\": \"" + newSum + "\"}\n]}",
		},
		{
			name: "no match: appended with the last item's spacing",
			in:   "{\"permission\": {}, \"authorizerChain\": [\n    {\"name\": \"other\", \"path\": \"/opt/other\", \"sha256\": \"" + oldSum + "\"}\n  ]}",
			want: "{\"permission\": {}, \"authorizerChain\": [\n    {\"name\": \"other\", \"path\": \"/opt/other\", \"sha256\": \"" + oldSum + "\"},\n    {\"name\": \"judge\", \"path\": \"/opt/courier/judge\", \"sha256\": \"" + newSum + "\"}\n  ]}",
		},
		{
			name:    "already pinned",
			in:      "{\"permission\": {}, \"authorizerChain\": [{\"name\": \"judge\", \"path\": \"/opt/courier/judge\", \"sha256\": \"" + newSum + "\"}]}",
			want:    "{\"permission\": {}, \"authorizerChain\": [{\"name\": \"judge\", \"path\": \"/opt/courier/judge\", \"sha256\": \"" + newSum + "\"}]}",
			changed: `pinned link "judge" (already pinned)`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, changed, err := PinInConfig([]byte(tc.in), e, tc.byName)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", out, tc.want)
			}
			if tc.changed != "" && changed != tc.changed {
				t.Errorf("changed %q, want %q", changed, tc.changed)
			}
			cfg, err := rules.Parse("out", out)
			if err != nil {
				t.Fatal(err)
			}
			hit := false
			for _, l := range cfg.AuthorizerChain {
				hit = hit || l.Path == e.Path && l.SHA256 == e.SHA256
			}
			if !hit {
				t.Errorf("no link pins %s in %v", e.Path, cfg.AuthorizerChain)
			}
		})
	}
}

func TestPinInConfigRefuses(t *testing.T) {
	e := PinEntry{Name: "judge", Path: "/opt/courier/judge", SHA256: newSum}
	for _, tc := range []struct{ name, in, want string }{
		{"empty", " \n", "the config is empty"},
		{"no permission object", "{}", "would not load"},
		{"not json", "{", "not valid JSON"},
		{"not an object", "[]", "want an object"},
		{"chain not an array", `{"permission": {}, "authorizerChain": {}}`, "authorizerChain is an object"},
		{"name taken by another binary", `{"permission": {}, "authorizerChain": [{"name": "judge", "path": "/elsewhere", "sha256": "` + oldSum + `"}]}`, `a link named "judge" runs /elsewhere`},
		{"config that does not load", `{"permission": {}, "authorizerChain": [], "reviewLogMaxBytes": "x"}`, "would not load"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := PinInConfig([]byte(tc.in), e, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDefaultLinkName(t *testing.T) {
	for in, want := range map[string]string{
		"/opt/courier-authz-denylist":   "courier-authz-denylist",
		"/x/judge.py":                   "judge.py",
		"/x/.hidden plugin!":            "hidden-plugin-",
		"/x/" + strings.Repeat("a", 80): strings.Repeat("a", 64),
	} {
		if got := DefaultLinkName(in); got != want {
			t.Errorf("DefaultLinkName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSumRefusesWhatLoadWouldRefuse(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "p")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	sum, err := Sum(bin)
	if err != nil || sum != "" && len(sum) != 64 {
		t.Fatalf("Sum = %q, %v", sum, err)
	}
	if err := os.Chmod(bin, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Sum(bin); err == nil || !strings.Contains(err.Error(), "not executable") {
		t.Errorf("a file that is not executable: %v", err)
	}
}

// FuzzPinInConfig: whatever the config holds, pinning never panics, and
// what it returns loads and pins the entry.
func FuzzPinInConfig(f *testing.F) {
	f.Add([]byte(`{"permission": {}, "authorizerChain": [{"name": "a", "path": "/opt/courier/judge", "sha256": "`+oldSum+`"}]}`), false)
	f.Add([]byte("{\n  \"permission\": {\"*\": \"ask\"}\n}"), true)
	f.Add([]byte(`{"permission": {}, "authorizerChain": [], "a\"b": 1}`), false)
	f.Fuzz(func(t *testing.T, config []byte, byName bool) {
		e := PinEntry{Name: "judge", Path: "/opt/courier/judge", SHA256: newSum}
		out, _, err := PinInConfig(config, e, byName)
		if err != nil {
			return
		}
		cfg, err := rules.Parse("out", out)
		if err != nil {
			t.Fatalf("output does not load: %v\n%s", err, out)
		}
		for _, l := range cfg.AuthorizerChain {
			if l.Path == e.Path && l.SHA256 == e.SHA256 {
				return
			}
		}
		t.Fatalf("output pins nothing:\n%s", out)
	})
}
