package rules

import (
	"path"
	"strings"

	"github.com/seed6639df8c/courier/bashunits"
)

// What the guard knows of commands that write: which of their words are
// written (a word the broker cannot place is a hit only there), and which
// write into a directory they name, so that naming an ancestor of a
// protected tree as that directory (`tar -C ~/.pi -xf evil.tar`, `cp -r
// agent ~/.pi/`) reaches the tree.

// mutatingCommands move, remove or re-permission what they name: naming a
// protected tree's ancestor with one of them (`mv ~/.pi /tmp/p`) moves the
// tree too, so for them an ancestor hits (see guard.checkMoves).
var mutatingCommands = map[string]bool{
	"mv": true, "rm": true, "rmdir": true, "unlink": true, "rename": true, "ln": true,
	"rsync": true, "chmod": true, "chown": true, "chgrp": true, "chattr": true,
	"setfacl": true, "mount": true, "umount": true, "shred": true,
}

// writers are the commands whose every operand is a write position; a
// non-nil test says when the command writes at all (`sed -i`, `curl -o`).
var writers = map[string]func(args []string) bool{
	"cp": nil, "mv": nil, "install": nil, "ln": nil, "tee": nil, "dd": nil,
	"rsync": nil, "scp": nil, "tar": nil, "bsdtar": nil, "unzip": nil, "cpio": nil,
	"7z": nil, "7za": nil, "patch": nil, "truncate": nil, "touch": nil, "mkdir": nil,
	"rm": nil, "rmdir": nil, "unlink": nil, "shred": nil, "chmod": nil, "chown": nil,
	"chgrp": nil, "chattr": nil, "setfacl": nil, "rename": nil, "sponge": nil, "mkfifo": nil,
	"sed":  hasOption("-i", "--in-place"),
	"perl": hasOption("-i"),
	"curl": hasOption("-o", "-O", "--output", "--output-dir", "--remote-name", "--create-dirs"),
	"wget": hasOption("-O", "-P", "-o", "--output-document", "--directory-prefix", "--output-file"),
}

// hasOption returns a test for an option among args, alone, with its
// value attached, or in a cluster of short options.
func hasOption(opts ...string) func([]string) bool {
	return func(args []string) bool {
		for _, a := range args {
			for _, o := range opts {
				if a == o || strings.HasPrefix(a, o) && (len(o) == 2 || a[len(o)] == '=') {
					return true
				}
				if len(o) == 2 && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], o[1]) >= 0 {
					return true
				}
			}
		}
		return false
	}
}

// writes reports whether u's operands are write positions.
func writes(u *bashunits.Unit) bool {
	if len(u.Args) == 0 {
		return u.Floor == bashunits.FloorUnparseable // a guess: err towards writing
	}
	test, ok := writers[path.Base(u.Name)]
	return ok && (test == nil || test(u.Args[1:]))
}

// operands splits args (after the command name) into options and
// operands; valued lists the short options that take the next word.
func operands(args []string, valued string) (opts map[string]string, ops []string) {
	opts = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return opts, append(ops, args[i+1:]...)
		case strings.HasPrefix(a, "--"):
			name, val, _ := strings.Cut(a, "=")
			opts[name] = val
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				o := "-" + a[j:j+1]
				if strings.IndexByte(valued, a[j]) >= 0 {
					switch {
					case j+1 < len(a):
						opts[o] = a[j+1:]
					case i+1 < len(args):
						i++
						opts[o] = args[i]
					}
					break
				}
				opts[o] = ""
			}
		default:
			ops = append(ops, a)
		}
	}
	return opts, ops
}

// intoDirs returns the words naming where u writes beyond its own
// operands, each to be tested with its ancestors: the directory an
// archive is extracted into ("." for the cwd), cp's destination joined
// with each source's base name, a symbolic link's target placed beside
// the link.
func intoDirs(u *bashunits.Unit) []string {
	if len(u.Args) == 0 {
		return nil
	}
	args := u.Args[1:]
	switch name := path.Base(u.Name); name {
	case "cp", "mv", "install", "rsync", "scp":
		opts, ops := operands(args, "tSmog")
		dest, ok := opts["-t"]
		if !ok {
			dest, ok = opts["--target-directory"]
		}
		if !ok {
			if len(ops) < 2 {
				return nil
			}
			dest, ops = ops[len(ops)-1], ops[:len(ops)-1]
		}
		out := make([]string, 0, len(ops)+1)
		if _, t := opts["-T"]; t {
			out = append(out, dest)
		} else if _, t := opts["--no-target-directory"]; t {
			out = append(out, dest)
		}
		for _, src := range ops {
			out = append(out, strings.TrimSuffix(dest, "/")+"/"+path.Base(src))
		}
		return out
	case "tar", "bsdtar":
		opts, ops := operands(args, "CfTXbIFLVKNg")
		_, x := opts["-x"]
		_, ext := opts["--extract"]
		if _, get := opts["--get"]; get {
			ext = true
		}
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") && strings.IndexByte(args[0], 'x') >= 0 {
			x = true // old-style bundled options: `tar xzf a.tgz`
		}
		_ = ops
		if !x && !ext {
			return nil
		}
		return []string{firstOf(opts, ".", "-C", "--directory")}
	case "unzip":
		opts, _ := operands(args, "dxP")
		for _, o := range []string{"-l", "-t", "-v", "-Z", "-p", "-z"} {
			if _, ok := opts[o]; ok {
				return nil
			}
		}
		return []string{firstOf(opts, ".", "-d")}
	case "7z", "7za", "7zr":
		if len(args) == 0 || args[0] != "x" && args[0] != "e" {
			return nil
		}
		for _, a := range args {
			if strings.HasPrefix(a, "-o") {
				return []string{a[2:]}
			}
		}
		return []string{"."}
	case "cpio":
		opts, ops := operands(args, "DEFHIMORc")
		if _, p := opts["-p"]; p && len(ops) > 0 {
			return []string{ops[len(ops)-1]}
		}
		_, i := opts["-i"]
		if _, ext := opts["--extract"]; !i && !ext {
			return nil
		}
		return []string{firstOf(opts, ".", "-D", "--directory")}
	case "patch":
		opts, _ := operands(args, "dpiobBDFrVYzg")
		return []string{firstOf(opts, ".", "-d", "--directory")}
	case "git":
		opts, _ := operands(args, "C")
		if d, ok := opts["-C"]; ok {
			return []string{d}
		}
	case "ln":
		return linkTargets(args)
	}
	return nil
}

// linkTargets places each relative target of `ln` where the link will
// resolve it: beside the link (and inside it, when the link name is a
// directory the link goes into).
func linkTargets(args []string) []string {
	opts, ops := operands(args, "tS")
	dir, ok := opts["-t"]
	if !ok {
		dir, ok = opts["--target-directory"]
	}
	var out []string
	switch {
	case ok:
		for _, t := range ops {
			out = append(out, dir+"/"+t)
		}
	case len(ops) >= 2:
		link := ops[len(ops)-1]
		for _, t := range ops[:len(ops)-1] {
			if strings.HasPrefix(t, "/") {
				continue
			}
			out = append(out, path.Dir(link)+"/"+t, strings.TrimSuffix(link, "/")+"/"+t)
		}
	}
	return out
}

// firstOf returns the value of the first option of names in opts, or def.
func firstOf(opts map[string]string, def string, names ...string) string {
	for _, n := range names {
		if v, ok := opts[n]; ok && v != "" {
			return v
		}
	}
	return def
}
