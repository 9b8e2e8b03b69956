package judge

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed6639df8c/courier/authorizer"
)

// Regression tests from an adversarial review of the judge (issue 20).

// TestMalformedAnswerQuotesNothingOfTheConversation: when the model saw
// the conversation, a malformed answer's defer reason (which the broker
// writes to the review log) quotes none of the model's text. A model that
// repeats the user's words in the verdict, a key or a repeated key must
// not carry them to the log, whatever the parse error says.
func TestMalformedAnswerQuotesNothingOfTheConversation(t *testing.T) {
	const marker = "zq-marker-4417"
	withConversation := ask("git reset --hard", nil, project, direct(user("The code word is "+marker+".")))
	for _, text := range []string{
		`{"verdict":"` + marker + `","reason":"x"}`,
		`{"verdict":"defer","reason":"x","` + marker + `":1}`,
		`{"verdict":"defer","reason":"x","` + marker + `":1,"` + marker + `":2}`,
		`{"verdict":"defer","reason":"x","Verdict":"` + marker + `","` + marker + `":1}`,
		`{"verdict":"defer","reason":"x","code":"` + marker + `"}`,
		`{"verdict":"defer","reason":"x"} ` + marker,
		marker,
	} {
		for _, provider := range providers {
			e := newEndpoint(t, provider, script{text: text})
			v, err := newTestJudge(t, e.config()).Authorize(t.Context(), withConversation)
			if err != nil {
				t.Fatalf("%s %q: %v", provider, text, err)
			}
			if v.Kind != authorizer.Defer {
				t.Errorf("%s %q: %v, want a defer", provider, text, v.Kind)
			}
			if strings.Contains(v.Reason, "zq") || strings.Contains(v.Code, "zq") {
				t.Errorf("%s %q: the model's words left the judge: reason %q, code %q", provider, text, v.Reason, v.Code)
			}
		}
	}
}

// TestMalformedAnswerKeepsItsDiagnosisWithoutConversation: without a
// conversation in the prompt the model's text can only restate what the
// asker sent, and the parse error is kept for the operator.
func TestMalformedAnswerKeepsItsDiagnosisWithoutConversation(t *testing.T) {
	for _, provider := range providers {
		e := newEndpoint(t, provider, script{text: `{"verdict":"yes","reason":"x"}`})
		v, err := newTestJudge(t, e.config()).Authorize(t.Context(), ask("git reset --hard", nil, project, nil))
		if err != nil || v.Kind != authorizer.Defer || v.Code != CodeMalformed || !strings.Contains(v.Reason, `verdict "yes"`) {
			t.Errorf("%s: %+v, %v; want a malformed defer naming the verdict", provider, v, err)
		}
	}
}

// TestCwdSensitiveMisses: commands whose meaning depends on the working
// directory that the deny-first rule let a model allow without one. Each
// is a relative path the command list did not know, a tilde bash does not
// expand to a home directory (~+ is $PWD, ~- is $OLDPWD, a quoted or
// escaped ~ is a file named ~), or a command that writes into the working
// directory without naming it.
func TestCwdSensitiveMisses(t *testing.T) {
	for _, line := range []string{
		// ~+ and ~- are the working directory and the previous one.
		"rm -rf ~+",
		"rm -rf ~+/build",
		"rm -rf ~-/build",
		"cp /etc/hosts ~-",
		// A quoted or escaped tilde is not expanded: ./~/x.
		"rm -r '~/x'",
		`rm -r "~/x"`,
		`rm -rf \~/x`,
		`rm -f ~"/x"`,
		`rm -rf ~root"/x"`,
		"tar --file=~/x.tar -c /etc",
		// Relative operands of commands outside the file-command list.
		"kubectl delete -f manifest.yaml",
		"kubectl apply -k overlay",
		"psql -f script.sql",
		"sqlite3 app.db 'drop table users'",
		"sort -o out /etc/hosts",
		"mkfs.ext4 disk.img",
		`awk 'BEGIN{system("rm -rf build")}'`,
		"vim notes",
		// An operand after -- is an operand, however it starts.
		"touch -- -x",
		"rm -rf -- -build",
		// Writes into the working directory without naming it.
		"wget https://example.com/x.tar.gz",
		"unzip /tmp/a.zip",
		"curl -O https://example.com/x",
		"curl -fsSLO https://example.com/x",
		"curl --remote-name https://example.com/x",
		// $PWD inside an anchored-looking path.
		"rm -rf /tmp/../$PWD",
	} {
		if got, _ := cwdSensitive(line); !got {
			t.Errorf("cwdSensitive(%q) = false, want true", line)
		}
	}
	// Still anchored, or no path at all.
	for _, line := range []string{
		"rm -rf ~/tmp/build", "rm -rf ~", "rm -rf ~root/x", "FOO=~/x true", "rm -rf ~/a ~/b", `rm -rf "$HOME"/tmp`, "rm -rf ${HOME}/x",
		"echo hello world", "printf '%s\n' a b", "kill -9 1234", "sleep 5", "date +%s",
		"curl -fsS https://example.com/x", "curl -o /tmp/x https://example.com/x", "ls /etc",
	} {
		if got, why := cwdSensitive(line); got {
			t.Errorf("cwdSensitive(%q) = true (%s), want false", line, why)
		}
	}
}

// TestAllowOfACwdSensitiveMissDefers: end to end, the model's allow of
// `kubectl delete -f manifest.yaml` without a working directory defers
// with missing_cwd, as the deny-first rule says.
func TestAllowOfACwdSensitiveMissDefers(t *testing.T) {
	for _, provider := range providers {
		e := newEndpoint(t, provider, script{text: `{"verdict":"allow","reason":"asked for","code":""}`})
		v, err := newTestJudge(t, e.config()).Authorize(t.Context(),
			ask("kubectl delete -f manifest.yaml", nil, "", direct(user("Delete the staging deployment."))))
		if err != nil || v.Kind != authorizer.Defer || v.Code != CodeMissingCwd {
			t.Errorf("%s: %+v, %v; want a missing_cwd defer", provider, v, err)
		}
	}
}

// TestConfigWarnings: a key over plain http to another host, and a key
// file others can read, are said at start; a local server and a 0600 key
// file are not.
func TestConfigWarnings(t *testing.T) {
	dir := t.TempDir()
	private, shared := filepath.Join(dir, "private.key"), filepath.Join(dir, "shared.key")
	for path, mode := range map[string]os.FileMode{private: 0o600, shared: 0o644} {
		if err := os.WriteFile(path, []byte("sk-x\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		c    Config
		want []string
	}{
		{"hosted, private key", Config{Provider: ProviderAnthropic, Model: "m", APIKeyFile: private}, nil},
		{"shared key file", Config{Provider: ProviderAnthropic, Model: "m", APIKeyFile: shared}, []string{"readable by others (mode 0644)"}},
		{"http to another host with a key", Config{Provider: ProviderOpenAI, Model: "m", BaseURL: "http://gpu-box.lan:8000/v1", APIKeyFile: private}, []string{"plain http to another host"}},
		{"http to another host, key from the environment", Config{Provider: ProviderOpenAI, Model: "m", BaseURL: "http://10.0.0.5:8000/v1", APIKeyEnv: "K"}, []string{"plain http"}},
		{"http to localhost with a key", Config{Provider: ProviderOpenAI, Model: "m", BaseURL: "http://localhost:8080/v1", APIKeyFile: private}, nil},
		{"http to 127.0.0.1 with a key", Config{Provider: ProviderOpenAI, Model: "m", BaseURL: "http://127.0.0.1:8080/v1", APIKeyFile: private}, nil},
		{"http to [::1] with a key", Config{Provider: ProviderOpenAI, Model: "m", BaseURL: "http://[::1]:8080/v1", APIKeyFile: private}, nil},
		{"http to another host without a key", Config{Provider: ProviderOpenAI, Model: "m", BaseURL: "http://gpu-box.lan:8000/v1"}, nil},
		{"https to another host", Config{Provider: ProviderOpenAI, Model: "m", BaseURL: "https://gpu-box.lan/v1", APIKeyFile: private}, nil},
	} {
		got := tc.c.Warnings()
		if len(got) != len(tc.want) {
			t.Errorf("%s: %q, want %d warnings", tc.name, got, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(got[i], w) || strings.Contains(got[i], "sk-x") {
				t.Errorf("%s: %q, want %q and no key", tc.name, got[i], w)
			}
		}
	}
}

// FuzzFence: whatever text a child or a transcript supplies, its fence
// holds: the block starts and ends with the same fence line, no line in
// between could close it (a run of backticks as long, after up to three
// spaces), and no character a model or a terminal could read as a line
// break or a control survives but the line feeds and tabs of the text.
// An inline value stays on one line, inside its own backtick run.
func FuzzFence(f *testing.F) {
	for _, s := range []string{"", "```", "a\n```\nb", "\r\n````\r\n", "x\u2028```\u2029", "\x00\x1b[2J", "``` ~~~\n   ```", strings.Repeat("`", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		block := fence(text)
		lines := strings.Split(block, "\n")
		if len(lines) < 2 || lines[0] != lines[len(lines)-1] || strings.Trim(lines[0], "`") != "" || len(lines[0]) < 3 {
			t.Fatalf("fence %q of %q", lines[0], text)
		}
		for _, l := range lines[1 : len(lines)-1] {
			if strings.HasPrefix(strings.TrimLeft(l, " "), lines[0]) {
				t.Fatalf("line %q closes the fence %q early", l, lines[0])
			}
		}
		in := inline(text)
		for _, r := range block + in {
			if r == '\r' || r == '\u2028' || r == '\u2029' || r == '\u0085' || r == 0 || r == 0x1b || r == '\v' || r == '\f' {
				t.Fatalf("%U survives in %q", r, block)
			}
		}
		if strings.ContainsAny(in, "\n\t") {
			t.Fatalf("inline %q spans lines", in)
		}
	})
}

// TestRelativeCwdIsUnknown: a working directory that is not absolute
// (".", "build", "~/src") fixes nothing a relative path means, so the
// model's allow of `rm -rf ./build` with it defers missing_cwd, and the
// prompt says the directory is unknown.
func TestRelativeCwdIsUnknown(t *testing.T) {
	for _, cwd := range []string{".", "build", "~/src/shop", "../shop"} {
		ev := ask("rm -rf ./build", nil, cwd, direct(user("Clean the build output.")))
		p := newPacket(ev)
		if p.Cwd != "" {
			t.Errorf("cwd %q: packet cwd %q, want unknown", cwd, p.Cwd)
		}
		if r, err := render(p); err != nil || !strings.Contains(r.User, "unknown (given as `"+cwd+"`, which is not an absolute path)") {
			t.Errorf("cwd %q: the prompt does not say it was given and is unknown (%v):\n%s", cwd, err, r.User)
		}
		e := newEndpoint(t, ProviderOpenAI, script{text: `{"verdict":"allow","reason":"asked for","code":""}`})
		v, err := newTestJudge(t, e.config()).Authorize(t.Context(), ev)
		if err != nil || v.Kind != authorizer.Defer || v.Code != CodeMissingCwd {
			t.Errorf("cwd %q: %+v, %v; want a missing_cwd defer", cwd, v, err)
		}
	}
}

// TestRedirectIsNotFollowed: an endpoint that redirects (307 keeps the
// method and body) never gets the key, the prompt or a verdict out of the
// judge: the call defers, and the redirect's target is never called.
func TestRedirectIsNotFollowed(t *testing.T) {
	for _, provider := range providers {
		target := newEndpoint(t, provider, script{text: `{"verdict":"allow","reason":"r","code":""}`})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.srv.URL+r.URL.Path, http.StatusTemporaryRedirect)
		}))
		t.Cleanup(srv.Close)
		c := target.config()
		c.BaseURL = strings.Replace(c.BaseURL, target.srv.URL, srv.URL, 1)
		v, err := newTestJudge(t, c).Authorize(t.Context(), ask("rm -rf ./build", nil, project, intent))
		if err != nil || v.Kind != authorizer.Defer {
			t.Errorf("%s: %+v, %v; want a defer", provider, v, err)
		}
		if n := len(target.got()); n != 0 {
			t.Errorf("%s: the redirect was followed: %d calls reached its target", provider, n)
		}
	}
}
