package judge

import "testing"

func TestCwdSensitive(t *testing.T) {
	for line, want := range map[string]bool{
		// Relative paths, directory changes, globs.
		"rm -rf ./build":                  true,
		"rm -rf build":                    true,
		"mv a b":                          true,
		"cat src/main.go":                 true,
		"ls":                              true,
		"ls *.go":                         true,
		"cd /tmp && rm -rf x":             true,
		"pushd /srv":                      true,
		"echo hi > out.txt":               true,
		"tar --file=out/x.tar -c /etc":    true,
		"./configure":                     true,
		"../bin/run":                      true,
		"echo $DIR/x":                     true,
		"find . -name x":                  true,
		"find":                            true,
		"sh -c 'rm -rf /'":                true, // the parser cannot see through it
		"sudo rm -rf build":               true,
		"rm -rf \"$TARGET\"":              true, // an expansion may be relative
		"echo $(cat notes)":               true,
		"FOO=a/b true":                    true,
		"git push --force origin main":    true, // which repository
		"npm test && git push origin":     true,
		"/usr/bin/git status":             true,
		"go test ./...":                   true,
		"cat <<EOF > notes.txt\nhi\nEOF":  true,
		"printf %s x >> ~/log; rm -rf a/": true,
		// Anchored or no paths at all.
		"rm -rf /tmp/build":                false,
		"rm -rf ~/tmp/build":               false,
		"rm -rf \"$HOME\"/tmp/build":       false,
		"ls /etc":                          false,
		"echo hello":                       false,
		"curl -fsS https://example.com/x":  false,
		"date":                             false,
		"uname -a":                         false,
		"kill -9 1234":                     false,
		"cat /etc/hosts | grep -c local":   true, // grep's pattern reads as an operand
		"tee /tmp/x < /etc/hosts":          false,
		"echo hi > /dev/null":              false,
		"ls -la /var/log && du -sh /var/x": false,
	} {
		got, why := cwdSensitive(line)
		if got != want {
			t.Errorf("cwdSensitive(%q) = %v (%s), want %v", line, got, why, want)
		}
		if got && why == "" {
			t.Errorf("cwdSensitive(%q) gives no reason", line)
		}
	}
}
