package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/google/renameio/v2"
	"github.com/rs/zerolog"

	"github.com/seed6639df8c/courier/plugins"
	"github.com/seed6639df8c/courier/plugins/confine"
	"github.com/seed6639df8c/courier/reviewlog"
	"github.com/seed6639df8c/courier/rules"
)

// pluginLogger is the plugin host's diagnostic log: on stderr, from Debug
// up, with --verbose; otherwise from Info up into the review log (nothing
// when there is none), so go-plugin's lines never reach the operator's
// terminal unasked.
func pluginLogger(verbose bool, review *reviewlog.Log, stderr io.Writer) zerolog.Logger {
	if verbose {
		return zerolog.New(zerolog.SyncWriter(zerolog.ConsoleWriter{Out: stderr, NoColor: true, TimeFormat: "15:04:05"})).
			Level(zerolog.DebugLevel).With().Timestamp().Str("component", "plugins").Logger()
	}
	return zerolog.New(plugins.ReviewLogWriter(review)).Level(zerolog.InfoLevel).With().Timestamp().Logger()
}

const pluginUsage = `usage: broker plugin pin FILE [--name N] [--write CONFIG]

Pins an authorizer plugin binary: prints the authorizerChain link for FILE
with its SHA-256, as JSON to paste into the config:

  {"name": "N", "path": "/abs/FILE", "sha256": "…"}

FILE is checked as the broker checks it before every start (a regular
executable file that only its owner, you or root, may write, in a
directory others cannot write); a file the broker would refuse is refused
here too, with the reason.

With --write CONFIG the config file is updated instead: with --name, the
link of that name gets FILE's path and sha256; without, every link whose
path is FILE gets its sha256; when none matches, the link is added at the
end of authorizerChain (created when missing) as one line. Only those
values are written: the rest of the file keeps its order, spacing and line
breaks. The file is replaced atomically (same mode and owner; a symlink
is followed and stays), only if the result loads as a config and the file
did not change meanwhile; CONFIG must exist.

Exit status 0 on success, 1 when FILE cannot be pinned or CONFIG cannot be
written, 2 for a usage error.

Flags:
`

// runPlugin is broker plugin SUBCOMMAND.
func runPlugin(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "pin" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprint(stdout, pluginUsage)
			return 0
		}
		fmt.Fprint(stderr, pluginUsage)
		return exitUsage
	}
	fs := flag.NewFlagSet("broker plugin pin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, pluginUsage); fs.PrintDefaults() }
	name := fs.String("name", "", "the link's name; default FILE's base name")
	write := fs.String("write", "", "update or add the link in this config file instead of printing it")
	// Flags may come before or after FILE.
	var files []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(files) != 1 {
		fmt.Fprintln(stderr, "broker plugin pin: want exactly one FILE")
		return exitUsage
	}
	path, err := filepath.Abs(files[0])
	if err != nil {
		fmt.Fprintf(stderr, "broker plugin pin: %v\n", err)
		return 1
	}
	path = filepath.Clean(path)
	sum, err := plugins.Sum(path)
	if err != nil {
		fmt.Fprintf(stderr, "broker plugin pin: %v\n", err)
		return 1
	}
	e := plugins.PinEntry{Name: *name, Path: path, SHA256: sum}
	if e.Name == "" {
		e.Name = plugins.DefaultLinkName(path)
	}
	if *write == "" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(e); err != nil {
			fmt.Fprintf(stderr, "broker plugin pin: %v\n", err)
			return 1
		}
		return 0
	}
	changed, err := pinInFile(*write, e, *name != "")
	if err != nil {
		fmt.Fprintf(stderr, "broker plugin pin: %s: %v\n", *write, err)
		return 1
	}
	fmt.Fprintf(stderr, "broker plugin pin: %s: %s: %s sha256 %s\n", *write, changed, path, sum)
	return 0
}

// pinBeforeReplace runs just before pinInFile checks that the config did
// not change under it; a test changes the config there.
var pinBeforeReplace = func() {}

// pinInFile pins e in the config file at path, replacing it atomically
// with the same mode and owner. A symlink is followed: the file it leads
// to is replaced, and the link stays the operator's. A file that changed
// while it was being pinned (another pin, an editor) is left alone.
func pinInFile(path string, e plugins.PinEntry, byName bool) (string, error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	before, err := os.Stat(target)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(target)
	if err != nil {
		return "", err
	}
	out, changed, err := plugins.PinInConfig(data, e, byName)
	if err != nil {
		return "", err
	}
	pf, err := renameio.NewPendingFile(target, renameio.WithStaticPermissions(before.Mode().Perm()))
	if err != nil {
		return "", err
	}
	defer pf.Cleanup()
	if _, err := pf.Write(out); err != nil {
		return "", err
	}
	// The new file is the writer's: a root operator pinning the broker
	// user's config would otherwise leave one the broker cannot read.
	if st, ok := before.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
		if err := pf.Chown(int(st.Uid), int(st.Gid)); err != nil {
			return "", fmt.Errorf("keep the owner %d:%d: %w", st.Uid, st.Gid, err)
		}
	}
	pinBeforeReplace()
	now, err := os.Stat(target)
	if err != nil {
		return "", err
	}
	if !os.SameFile(before, now) || !now.ModTime().Equal(before.ModTime()) || now.Size() != before.Size() {
		return "", errors.New("the config changed while it was being pinned: nothing written, run the pin again")
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return "", err
	}
	return changed, nil
}

// runCheckPlugins is broker check --plugins: every configured link is
// started as broker serve starts it, probed and stopped; one line per link
// on stdout.
func runCheckPlugins(ctx context.Context, configPath string, verbose bool, stdout, stderr io.Writer) int {
	cfg, err := rules.Load(configPath)
	if err != nil {
		fmt.Fprintf(stderr, "broker check: %v\n", err)
		return exitUsage
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "broker: warning: %s\n", w)
	}
	if len(cfg.AuthorizerChain) == 0 {
		fmt.Fprintf(stderr, "broker check: %s configures no authorizer links\n", cfg.Source)
		return 0
	}
	plan := confine.Probe(ctx)
	for _, m := range plan.Missing {
		fmt.Fprintf(stderr, "broker: warning: plugins run without %s\n", m)
	}
	logger := zerolog.Nop()
	if verbose {
		logger = pluginLogger(true, nil, stderr)
	}
	failed := 0
	for _, link := range cfg.AuthorizerChain {
		res, err := plugins.CheckLink(ctx, link, plugins.Options{Logger: &logger, Confinement: plan})
		if err != nil {
			failed++
			first, more, _ := strings.Cut(err.Error(), "\n")
			fmt.Fprintf(stdout, "FAIL %s: %s\n", link.Name, first)
			for line := range strings.SplitSeq(more, "\n") {
				if line = strings.TrimSpace(line); line != "" {
					fmt.Fprintf(stderr, "broker check: %s: %s\n", link.Name, line)
				}
			}
			if errors.Is(err, plugins.ErrChecksum) {
				fmt.Fprintf(stderr, "broker check: %s: if the new binary is the one you want, pin it: broker plugin pin %s --name %s --write CONFIG\n", link.Name, link.Path, link.Name)
			}
			continue
		}
		health := "health SERVING"
		if !res.AuthorizerHealth {
			health += " (AuthorizerService.Health not implemented)"
		}
		plugin := res.Plugin
		if res.Version != "" {
			plugin += " version " + res.Version
		}
		fmt.Fprintf(stdout, "ok   %s: %s started, pin matches, %s (confinement: %s)\n", link.Name, plugin, health, plan.Summary())
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "broker check: %d of %d authorizer links failed\n", failed, len(cfg.AuthorizerChain))
		return 1
	}
	return 0
}
