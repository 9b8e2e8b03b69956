package rules

import (
	"testing"

	"github.com/seed6639df8c/courier/wire"
)

func TestSuggestGrant(t *testing.T) {
	tests := []struct{ surface, value, want string }{
		{"bash", "git status --short", "git status *"},
		{"bash", "git push --force origin main", "git push *"},
		{"bash", "git --no-pager log", "git --no-pager log"},
		{"bash", "git -C /x status *", ""},
		{"bash", "terraform apply -auto-approve", "terraform apply *"},
		{"bash", "kubectl delete pod x", "kubectl delete *"},
		{"bash", `git "status"`, ""},
		{"bash", "FOO=1 make", ""},
		{"bash", "$CMD x", ""},
		{"bash", "> out", ""},
		{"bash", "npm run dev", "npm run dev*"},
		{"bash", "npm install lodash", "npm install *"},
		{"bash", "ls -la", "ls *"},
		{"bash", "pwd", "pwd *"},
		{"bash", "  rm   -rf build ", "rm *"},
		{"bash", "", ""},
		{"bash", "*", ""},
		{"bash", "git * --all", ""},
		{"path_write", "src/a.go", "src/*"},
		{"path_read", "/etc/hosts", "/etc/hosts"}, // a top-level directory: the exact path
		{"external_directory_read", "/other/project/src/x.ts", "/other/project/src/*"},
		{"mcp", "exa:search", "exa:search"},
		// Cleaned lexically, as the broker matches it.
		{"path_write", "/srv/app/work/../../../etc/cron.d/evil", "/etc/cron.d/*"},
		{"path_write", "/srv/app//work/./a.go", "/srv/app/work/*"},
		// Never the whole filesystem, never a guess at a directory.
		{"path_write", "/evil", "/evil"},
		{"path_write", "a.go", "a.go"},
		// A wildcard in the value would widen the grant: none.
		{"path_write", "/srv/*/a.go", ""},
		{"path_read", "/srv/a?.go", ""},
		{"mcp_fs_search", "*.go", ""},
	}
	for _, tt := range tests {
		if got := SuggestGrant(tt.surface, tt.value); got != (wire.SuggestedGrant{Surface: tt.surface, Pattern: tt.want}) {
			t.Errorf("SuggestGrant(%q, %q) = %q, want %q", tt.surface, tt.value, got.Pattern, tt.want)
		}
	}
}
