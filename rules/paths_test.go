package rules

import "testing"

// TestPathValuesAreCleaned: on path surfaces the values are cleaned
// lexically before matching, never against the broker's working
// directory. The attack: with `path_write "/srv/app/work/*": allow`,
// `/srv/app/work/../../../etc/cron.d/evil` was allowed, though the same
// target spelled plainly only asked.
func TestPathValuesAreCleaned(t *testing.T) {
	p := mustPolicy(t, `{"permission": {"*": "ask", "path_write": {"/srv/app/work/*": "allow", "*.env": "deny"}}}`, Options{})
	str := func(s string) *string { return &s }
	tests := []struct {
		name     string
		values   []string
		boundary *string
		want     Action
		// value is the cleaned value the deciding rule matched.
		value string
	}{
		{"dot-dot out of the allowed tree", []string{"/srv/app/work/../../../etc/cron.d/evil"}, nil, Ask, "/etc/cron.d/evil"},
		{"dot-dot out, as the boundary too", []string{"/srv/app/work/../../../etc/cron.d/evil"}, str("/srv/app/work/../../../etc/cron.d/evil"), Ask, "/etc/cron.d/evil"},
		{"the same target spelled plainly", []string{"/etc/cron.d/evil"}, nil, Ask, "/etc/cron.d/evil"},
		{"dot-dot that stays inside", []string{"/srv/app/work/sub/../main.go"}, nil, Allow, "/srv/app/work/main.go"},
		{"dot, double slash and trailing slash", []string{"/srv/app/work/./a//b/"}, nil, Allow, "/srv/app/work/a/b"},
		{"the tree itself is not in it", []string{"/srv/app/work/."}, nil, Ask, "/srv/app/work"},
		{"a relative value stays relative", []string{"work/../x.env"}, nil, Deny, "x.env"},
		{"a relative value is never placed in the broker's cwd", []string{"./../../srv/app/work/x"}, nil, Ask, "../../srv/app/work/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Resolve(Query{Surface: "path_write", MatchValues: tt.values, BoundaryValue: tt.boundary})
			if d.Action != tt.want || d.Value != tt.value {
				t.Errorf("got %v on %q, want %s on %q", d, d.Value, tt.want, tt.value)
			}
		})
	}
}

// TestPathAliasesMostRestrictive: across the aliases of one path the most
// restrictive answer wins; an allow needs the canonical path allowed. The
// attack: a symlink work/keys → ~/.ssh made work/keys/authorized_keys
// allowed by `/srv/app/work/*` though `~/.ssh/*` is denied, because the
// last rule matching any alias decided (pi's evaluateAnyValue).
func TestPathAliasesMostRestrictive(t *testing.T) {
	// The family sugar puts ~/.ssh/* before path_write's own allow, so
	// "the last rule matching any alias" picked the allow.
	p := mustPolicy(t, `{"permission": {"*": "ask",
		"path": {"~/.ssh/*": {"action": "deny", "reason": "SSH keys stay private"}},
		"path_write": {"/srv/app/work/*": "allow", "/srv/app/link/*": "allow"}}}`, Options{})
	keys := testHome + "/.ssh/authorized_keys"
	elsewhere := "/srv/other/x"
	allowed := "/srv/app/work/x"
	tests := []struct {
		name     string
		values   []string
		boundary *string
		want     Action
		reason   string
	}{
		{"symlink into a denied tree", []string{"/srv/app/work/keys/authorized_keys", "work/keys/authorized_keys", keys}, &keys, Deny, "SSH keys stay private"},
		{"the denied alias given as the boundary only", []string{"/srv/app/work/keys/authorized_keys"}, &keys, Deny, "SSH keys stay private"},
		{"symlink out to a path that only asks", []string{"/srv/app/work/link/x", elsewhere}, &elsewhere, Ask, ""},
		{"canonical path allowed, a relative alias asks", []string{"/srv/app/link/x", "x", allowed}, &allowed, Allow, ""},
		{"no boundary: every alias must be allowed", []string{"/srv/app/work/x", "/srv/app/link/x"}, nil, Allow, ""},
		{"no boundary: one alias asks", []string{"/srv/app/work/x", "x"}, nil, Ask, ""},
		{"no boundary: one alias denied", []string{"/srv/app/work/x", keys}, nil, Deny, "SSH keys stay private"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Resolve(Query{Surface: "path_write", MatchValues: tt.values, BoundaryValue: tt.boundary})
			if d.Action != tt.want || d.Reason != tt.reason {
				t.Errorf("got %v %q, want %s %q", d, d.Reason, tt.want, tt.reason)
			}
		})
	}
	// A bare family query folds the same rule over both members.
	d := p.Resolve(Query{Surface: "path", MatchValues: []string{"/srv/app/work/keys/authorized_keys", keys}, BoundaryValue: &keys})
	if d.Action != Deny {
		t.Errorf("bare family: %v", d)
	}
}
