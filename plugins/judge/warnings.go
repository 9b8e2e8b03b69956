package judge

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
)

// Warnings are what the operator should know about a parsed config that
// is not wrong enough to refuse: an API key sent in clear text to another
// machine, a key file others can read. cmd/courier-authz-judge prints
// them on its stderr at start (the broker's review log, as the plugin's
// log). None names the key itself.
func (c Config) Warnings() []string {
	var out []string
	hasKey := c.APIKeyFile != "" || c.APIKeyEnv != ""
	if u, err := url.Parse(c.BaseURL); err == nil && c.BaseURL != "" && u.Scheme == "http" && hasKey && !loopback(u.Hostname()) {
		out = append(out, fmt.Sprintf("base_url %s is plain http to another host: the API key and every prompt (commands, the conversation) cross the network unencrypted; use https", u.Redacted()))
	}
	if c.APIKeyFile != "" {
		if fi, err := os.Stat(c.APIKeyFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
			out = append(out, fmt.Sprintf("api_key_file %s is readable by others (mode %04o): make it 0600, the broker's user's", c.APIKeyFile, fi.Mode().Perm()))
		}
	}
	return out
}

// loopback reports whether host names this machine: localhost or a
// loopback address.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
