// Command courier-bench measures courier end to end on this machine: real
// broker processes on fresh mailbox roots, on tmpfs and on disk, next to
// the 250 ms polling design it replaces. `make bench` runs it.
//
// Output rules: progress goes to stderr prefixed "courier-bench: "; the
// table goes to stdout and ends with the headline line; the same figures
// are written as JSON to --out. Exit status 0 when every figure was
// measured (targets missed are reported, not failures), 1 when a figure
// could not be measured or the run was interrupted, 2 for a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/seed6639df8c/courier/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if len(os.Args) > 1 && os.Args[1] == bench.FloodWriterCommand {
		// The flood scenarios' hostile subagent, a process of its own.
		err := bench.FloodWriter(ctx, os.Args[2:], os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintf(os.Stderr, "courier-bench: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("courier-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	binDir := fs.String("bin", "bin", "directory holding broker, child, courier-child-nats and courier-broker-nats (the nats scenario), courier-authz-readonly and "+bench.NoopBinary)
	out := fs.String("out", "bench-results.json", "where to write the figures as JSON")
	tmpfs := fs.String("tmpfs", "/dev/shm", "a directory on tmpfs for the mailbox roots; empty skips tmpfs")
	disk := fs.String("disk", os.TempDir(), "a directory on the project's disk for the mailbox roots; empty skips disk")
	profile := fs.String("cpuprofile-dir", "", "write a CPU profile of the first rule-resolved broker, and of the nats scenario's brokers, here")
	quick := fs.Bool("quick", false, "a smoke run with small counts (figures not comparable)")
	budget := fs.Duration("budget", bench.DefaultBudget, "skip the scenarios not started by then (0: no budget)")
	only := fs.String("only", "", "run only these scenarios, comma-separated: "+strings.Join(bench.Scenarios, ", ")+" ("+strings.Join(bench.OnRequest, " and ")+" run only when named)")
	selfProfile := fs.String("driver-cpuprofile", "", "write a CPU profile of this driver (the requesters' side) to this file")
	heldArgs := fs.String("held1mib-broker-args", strings.Join(bench.DefaultHeldMiBArgs, " "), "flags of the broker that holds the asks of about 1 MiB (floodtty), space-separated")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: courier-bench [flags]\n\nStarts real brokers and measures them; see `go doc ./bench`.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "courier-bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	cfg := bench.Config{
		BinDir: *binDir, Counts: bench.DefaultCounts, Progress: stderr, CPUProfileDir: *profile, Budget: *budget,
		Command:     strings.Join(append([]string{"courier-bench"}, args...), " "),
		HeldMiBArgs: strings.Fields(*heldArgs),
	}
	if *quick {
		cfg.Counts = bench.QuickCounts
	}
	if *only != "" {
		for _, name := range strings.Split(*only, ",") {
			if !slices.Contains(bench.Scenarios, name) {
				fmt.Fprintf(stderr, "courier-bench: --only: unknown scenario %q, expected one of %s\n", name, strings.Join(bench.Scenarios, ", "))
				return 2
			}
			cfg.Only = append(cfg.Only, name)
		}
	}
	for _, f := range []bench.Filesystem{{Label: "tmpfs", Dir: *tmpfs}, {Label: "disk", Dir: *disk}} {
		if f.Dir != "" {
			cfg.Filesystems = append(cfg.Filesystems, f)
		}
	}
	for _, name := range []string{"broker", "child", "courier-authz-readonly", bench.NoopBinary} {
		if _, err := os.Stat(filepath.Join(*binDir, name)); err != nil {
			fmt.Fprintf(stderr, "courier-bench: %v (run `make build` first)\n", err)
			return 2
		}
	}
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			fmt.Fprintf(stderr, "courier-bench: %v\n", err)
			return 2
		}
	}

	if *selfProfile != "" {
		f, err := os.Create(*selfProfile)
		if err != nil {
			fmt.Fprintf(stderr, "courier-bench: %v\n", err)
			return 2
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(stderr, "courier-bench: %v\n", err)
			f.Close()
			return 2
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}

	res, runErr := bench.Run(ctx, cfg)
	code := 0
	if runErr != nil {
		fmt.Fprintf(stderr, "courier-bench: %v\n", runErr)
		code = 1
	}
	if res == nil {
		return 1
	}
	if err := writeJSON(*out, res); err != nil {
		fmt.Fprintf(stderr, "courier-bench: %v\n", err)
		code = 1
	}
	for _, fr := range res.Filesystems {
		if len(fr.Errors) > 0 {
			code = 1
		}
	}
	if err := res.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "courier-bench: %v\n", err)
		return 1
	}
	return code
}

func writeJSON(path string, res *bench.Results) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	if err := res.WriteJSON(f); err != nil {
		f.Close()
		return fmt.Errorf("writing results: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing results: %w", err)
	}
	return nil
}
