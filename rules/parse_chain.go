package rules

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seed6639df8c/courier/internal/strictjson"
)

// linkNameRE is what an authorizer link's name may be: it is written into
// decidedBy and review logs, so it is kept to a plain token.
// Compiled on first use, not at init: every child process links rules
// and never parses a chain (0.3 ms of its start, BENCHMARKS.md).
var linkNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })

// sha256RE is a SHA-256 digest in hex, either case.
var sha256RE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9A-Fa-f]{64}$`) })

// linkKeys lists the keys of an authorizerChain entry, for messages.
const linkKeys = "name, path, sha256, args, timeoutMs, onFailure, mode, disclose, network"

// authorizerChain reads the authorizerChain array v: its entries in order.
func (p *parser) authorizerChain(path string, v strictjson.Value) []AuthorizerLink {
	if v.Kind() != strictjson.KindArray {
		p.fail(v.Offset(), path, "expected an array of authorizer links {name, path, sha256, ...}, got "+describe(v))
		p.skip(path, v)
		return nil
	}
	var links []AuthorizerLink
	names := make(map[string]int)
	items := v.Items()
	for i := 0; items.Next(); i++ {
		ep := path + "[" + strconv.Itoa(i) + "]"
		entry := items.Value()
		if entry.Kind() != strictjson.KindObject {
			msg := "expected an authorizer link {name, path, sha256, ...}, got " + describe(entry)
			if entry.Kind() == strictjson.KindString {
				msg += ": courier runs authorizer links as plugin binaries, so pi's registered link names do not apply; write {\"name\": ..., \"path\": ..., \"sha256\": ...}"
			}
			p.fail(entry.Offset(), ep, msg)
			p.skip(ep, entry)
			continue
		}
		link, ok := p.authorizerLink(ep, entry)
		if !ok {
			continue
		}
		if first, dup := names[link.Name]; dup {
			line, col := p.lineCol(first)
			p.fail(entry.Offset(), ep+".name", fmt.Sprintf("duplicate link name %q (first at %d:%d): names must be unique", link.Name, line, col))
			continue
		}
		names[link.Name] = entry.Offset()
		links = append(links, link)
	}
	return links
}

// authorizerLink reads one link, the object v. Unknown keys are errors,
// not warnings: a misspelt "mode" would otherwise enforce a link meant to
// run in shadow.
func (p *parser) authorizerLink(path string, v strictjson.Value) (AuthorizerLink, bool) {
	openAt := v.Offset()
	link := AuthorizerLink{Timeout: DefaultLinkTimeout, OnFailure: LinkFailDeny, Mode: LinkEnforce, At: p.at(openAt)}
	valid := true
	fail := func(at int, kp, msg string) {
		p.fail(at, kp, msg)
		valid = false
	}
	str := func(kp string, v strictjson.Value) (string, int, bool) {
		p.skip(kp, v)
		s, ok := stringOf(v)
		if !ok {
			fail(v.Offset(), kp, "expected a string, got "+describe(v))
		}
		return s, v.Offset(), ok
	}
	p.object(path, v, func(key string, keyAt int, v strictjson.Value) {
		kp := memberPath(path, key)
		switch key {
		case "name":
			if s, at, ok := str(kp, v); ok {
				if !linkNameRE().MatchString(s) {
					fail(at, kp, "expected a name of letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit), got "+describeString(s))
					return
				}
				link.Name = s
			}
		case "path":
			if s, at, ok := str(kp, v); ok {
				if !filepath.IsAbs(s) {
					fail(at, kp, "expected an absolute path to the plugin binary, got "+describeString(s))
					return
				}
				link.Path = filepath.Clean(s)
			}
		case "sha256":
			if s, at, ok := str(kp, v); ok {
				if !sha256RE().MatchString(s) {
					fail(at, kp, "expected the binary's SHA-256 as 64 hex digits (sha256sum prints it), got "+describeString(s))
					return
				}
				link.SHA256 = strings.ToLower(s)
			}
		case "args":
			args, ok := p.stringArray(kp, v)
			if !ok {
				valid = false
				return
			}
			link.Args = args
		case "timeoutMs":
			ms, ok := p.integer(kp, v, 1, "milliseconds")
			if !ok {
				valid = false
				return
			}
			link.Timeout = time.Duration(ms) * time.Millisecond
		case "onFailure":
			if s, at, ok := str(kp, v); ok {
				switch LinkFailure(s) {
				case LinkFailDeny, LinkFailDefer:
					link.OnFailure = LinkFailure(s)
				default:
					fail(at, kp, `expected "deny" or "defer" (a failing link never allows), got `+describeString(s))
				}
			}
		case "mode":
			if s, at, ok := str(kp, v); ok {
				switch LinkMode(s) {
				case LinkEnforce, LinkShadow:
					link.Mode = LinkMode(s)
				default:
					fail(at, kp, `expected "enforce" or "shadow", got `+describeString(s))
				}
			}
		case "disclose":
			if v.Kind() != strictjson.KindArray {
				fail(v.Offset(), kp, `expected an array of "cwd", "principal" and "conversation", got `+describe(v))
				p.skip(kp, v)
				return
			}
			items := v.Items()
			for i := 0; items.Next(); i++ {
				ip := kp + "[" + strconv.Itoa(i) + "]"
				item := items.Value()
				p.skip(ip, item)
				switch s, isStr := stringOf(item); {
				case isStr && s == "cwd":
					link.DiscloseCwd = true
				case isStr && s == "principal":
					link.DisclosePrincipal = true
				case isStr && s == "conversation":
					link.DiscloseConversation = true
				default:
					fail(item.Offset(), ip, `expected "cwd", "principal" or "conversation", got `+describe(item))
				}
			}
		case "network":
			b, ok := p.boolean(kp, v)
			if !ok {
				valid = false
				return
			}
			link.Network = b
		default:
			msg := fmt.Sprintf("unknown key %q: an authorizer link reads %s", key, linkKeys)
			if s := didYouMean(key, strings.Split(linkKeys, ", ")); s != "" {
				msg = fmt.Sprintf("unknown key %q: %s (an authorizer link reads %s)", key, s, linkKeys)
			}
			fail(keyAt, kp, msg)
			p.skip(kp, v)
		}
	})
	for _, req := range []struct{ key, value string }{{"name", link.Name}, {"path", link.Path}, {"sha256", link.SHA256}} {
		if req.value == "" && valid {
			fail(openAt, path, fmt.Sprintf("missing %q: an authorizer link needs name, path and sha256", req.key))
		}
	}
	return link, valid
}

// stringArray reads an array of strings, the value v.
func (p *parser) stringArray(path string, v strictjson.Value) ([]string, bool) {
	if v.Kind() != strictjson.KindArray {
		p.fail(v.Offset(), path, "expected an array of strings, got "+describe(v))
		p.skip(path, v)
		return nil, false
	}
	out := []string{}
	valid := true
	items := v.Items()
	for i := 0; items.Next(); i++ {
		ip := path + "[" + strconv.Itoa(i) + "]"
		item := items.Value()
		p.skip(ip, item)
		s, isStr := stringOf(item)
		if !isStr {
			p.fail(item.Offset(), ip, "expected a string, got "+describe(item))
			valid = false
			continue
		}
		out = append(out, s)
	}
	return out, valid
}
