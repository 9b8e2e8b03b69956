package rules

import (
	"errors"
	"strings"
	"testing"
)

// Unknown keys are errors wherever courier defines the shape; pi's own
// settings that courier does not read are a notice each; yolo mode without
// a permission object is an error; and every problem and warning of one
// document is reported at once.
func TestUnknownKeysAndYolo(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		// errs are the problems (in order) of a refused config; warns the
		// warnings, of a refused config or of an accepted one.
		errs, warns []string
	}{
		{
			// The attack of issue 14: a typo turned every ask into an allow.
			name: "the issue's typo under yolo",
			doc: `{
  "permisson": {"bash": {"rm *": "deny"}},
  "yoloMode": true
}`,
			errs: []string{
				`c.json:2:3: permisson: unknown key: did you mean "permission"?`,
				`c.json:3:15: yoloMode: true turns every ask into an allow, and this config has no "permission" object, so every ask would be allowed: add the permission object (its denies stand under yolo) or set yoloMode to false`,
			},
		},
		{
			name: "yolo with no permission object",
			doc:  `{"yoloMode": true, "forwardingTimeoutMs": 1000}`,
			errs: []string{`c.json:1:14: yoloMode: true turns every ask into an allow, and this config has no "permission" object, so every ask would be allowed: add the permission object (its denies stand under yolo) or set yoloMode to false`},
		},
		{
			// pi reads it as no rules at all; courier refuses it (issue
			// 16): the built-in ones are not merged into a config file.
			name: "no permission object is an error",
			doc:  `{"yoloMode": false}`,
			errs: []string{`c.json:1:1: no "permission" object, so no rules at all, not even the built-in denies (rules/default.json applies only without --config): copy its permission object to start from, or write "permission": {} to serve with no rules on purpose`},
		},
		{
			name: "an empty permission object is no rules on purpose",
			doc:  `{"permission": {}, "yoloMode": false}`,
		},
		{
			name: "yolo with a permission object",
			doc:  `{"yoloMode": true, "permission": {"bash": {"rm *": "deny"}}}`,
		},
		{
			name: "letter case is a typo too",
			doc:  `{"permission": {}, "YoloMode": true}`,
			errs: []string{`c.json:1:20: YoloMode: unknown key: keys are case-sensitive, did you mean "yoloMode"?`},
		},
		{
			name: "a key like nothing lists what courier reads",
			doc:  `{"permission": {}, "theme": "dark"}`,
			errs: []string{`c.json:1:20: theme: unknown key: courier reads permission, agents, yoloMode, legacyBashDisplayMatch, forwardingTimeoutMs, reviewLogFieldMaxWidth, reviewLogMaxBytes, promptTimeoutMs, authorizerChain (and accepts pi-permission-system's other settings, unread)`},
		},
		{
			name:  "pi's settings are a notice each, not an error",
			doc:   `{"$schema": "https://example.invalid/s.json", "permission": {"*": "ask"}, "debugLog": true, "promptMaxRows": 10, "shellTools": {"exec": {"commandArgument": "cmd"}}}`,
			warns: []string{`c.json:1:75: debugLog: pi-permission-system's setting, which courier does not read: ignored`, `c.json:1:93: promptMaxRows: pi-permission-system's setting, which courier does not read: ignored`, `c.json:1:114: shellTools: pi-permission-system's setting, which courier does not read: ignored`},
		},
		{
			name: "inside an agent entry",
			doc:  `{"permission": {}, "agents": {"Explore": {"permision": {"bash": "allow"}}}}`,
			errs: []string{`c.json:1:43: agents.Explore.permision: unknown key: did you mean "permission"? (an agent entry reads permission and users)`},
		},
		{
			name: "inside a deny object",
			doc:  `{"permission": {"bash": {"npm *": {"action": "deny", "reson": "use pnpm"}}}}`,
			errs: []string{`c.json:1:54: permission.bash["npm *"]: unknown key "reson", expected {"action":"deny","reason":...}: did you mean "reason"?`},
		},
		{
			name: "inside an authorizer link",
			doc:  `{"permission": {}, "authorizerChain": [{"name": "d", "path": "/opt/d", "sha256": "` + strings.Repeat("0", 64) + `", "onFailur": "deny"}]}`,
			errs: []string{`c.json:1:150: authorizerChain[0].onFailur: unknown key "onFailur": did you mean "onFailure"? (an authorizer link reads name, path, sha256, args, timeoutMs, onFailure, mode, disclose, network)`},
		},
		{
			name: "errors and warnings reported together",
			doc: `{
  "permission": {"bash": {"git *": "ask", "7": "allow"}},
  "debugLog": true,
  "yolomode": true
}`,
			errs:  []string{`c.json:4:3: yolomode: unknown key: keys are case-sensitive, did you mean "yoloMode"?`},
			warns: []string{`c.json:2:43: permission.bash["7"]: integer-like key: JavaScript, and so pi, lists such keys first in numeric order; courier evaluates it in that place too, before keys written above it`, `c.json:3:3: debugLog: pi-permission-system's setting, which courier does not read: ignored`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("c.json", []byte(tt.doc))
			var problems, warnings []Diagnostic
			if err != nil {
				var ce *ConfigError
				if !errors.As(err, &ce) {
					t.Fatalf("error %v is not a *ConfigError", err)
				}
				problems, warnings = ce.Problems, ce.Warnings
			} else {
				warnings = cfg.Warnings
			}
			if got := diagStrings(problems); strings.Join(got, "\n") != strings.Join(tt.errs, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.errs, "\n"))
			}
			if got := diagStrings(warnings); strings.Join(got, "\n") != strings.Join(tt.warns, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.warns, "\n"))
			}
			if err != nil {
				for _, w := range tt.warns {
					if !strings.Contains(err.Error(), "warning: "+w) {
						t.Errorf("the error does not report the warning %q:\n%s", w, err)
					}
				}
			}
		})
	}
}

func diagStrings(ds []Diagnostic) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}

func TestSuggestKey(t *testing.T) {
	names := []string{"permission", "agents", "yoloMode", "forwardingTimeoutMs"}
	for _, tt := range []struct{ key, want string }{
		{"permisson", "permission"},
		{"Permission", "permission"},
		{"yolo_mode", "yoloMode"},
		{"forwardingTimeout", "forwardingTimeoutMs"},
		{"agent", "agents"},
		{"theme", ""},
		{"", ""},
		{"x", ""},
	} {
		if got := suggestKey(tt.key, names); got != tt.want {
			t.Errorf("suggestKey(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}
