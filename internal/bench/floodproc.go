package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seed6639df8c/courier/mailbox"
)

// FloodWriterCommand is courier-bench's hidden subcommand that floods: a
// process of its own, as a hostile subagent is, so that the legitimate
// requester measured beside it does not share the flooder's process (its
// goroutines, its garbage collector), only the machine.
const FloodWriterCommand = "flood-writer"

// FloodWriter writes requests into a broker's inbox as fast as it can
// (flooder) until ctx ends (SIGTERM), then writes the ids it wrote to the
// --ids file and their count to stdout.
func FloodWriter(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet(FloodWriterCommand, flag.ContinueOnError)
	root := fs.String("root", "", "mailbox root")
	target := fs.String("target", "", "the serving session")
	surface := fs.String("surface", heldAsk.Surface, "the asks' surface")
	value := fs.String("value", heldAsk.Value, "the asks' value")
	ids := fs.String("ids", "", "where to write the ids written, one a line")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" || *target == "" || *ids == "" {
		return errors.New("flood-writer: --root, --target and --ids are required")
	}
	f := &flooder{layout: mailbox.Layout{Root: *root}, target: *target, kind: askKind{Name: "flood", Surface: *surface, Value: *value}}
	runErr := f.run(ctx)
	out, err := os.Create(*ids)
	if err != nil {
		return fmt.Errorf("flood-writer: %w", err)
	}
	w := bufio.NewWriter(out)
	for _, id := range f.ids {
		fmt.Fprintln(w, id)
	}
	if err := errors.Join(w.Flush(), out.Close()); err != nil {
		return fmt.Errorf("flood-writer: %w", err)
	}
	fmt.Fprintln(stdout, f.written.Load())
	return runErr
}

// floodProc is a running flood-writer process.
type floodProc struct {
	cmd     *exec.Cmd
	stdout  bytes.Buffer
	stderr  bytes.Buffer
	idsPath string
	started time.Time
}

// startFlood starts a flood-writer against layout's session target; its
// ids go to idsPath.
func startFlood(layout mailbox.Layout, target, idsPath string, k askKind) (*floodProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting the flood writer: %w", err)
	}
	p := &floodProc{idsPath: idsPath}
	p.cmd = exec.Command(self, FloodWriterCommand, "--root", layout.Root, "--target", target, "--surface", k.Surface, "--value", k.Value, "--ids", idsPath)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the flood writer: %w", err)
	}
	return p, nil
}

// stop ends the flood and returns how many requests it wrote, the ids of
// which are in idsPath, and how long it ran.
func (p *floodProc) stop() (int, time.Duration, error) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		err = errors.New("did not stop on SIGTERM; killed")
	}
	took := time.Since(p.started)
	if err != nil {
		return 0, took, fmt.Errorf("the flood writer: %w: %s", err, strings.TrimSpace(p.stderr.String()))
	}
	n, perr := strconv.Atoi(strings.TrimSpace(p.stdout.String()))
	if perr != nil {
		return 0, took, fmt.Errorf("the flood writer printed %q: %w", p.stdout.String(), perr)
	}
	return n, took, nil
}

// readIDs is the ids a flood writer wrote.
func readIDs(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the flood's ids: %w", err)
	}
	return strings.Fields(string(data)), nil
}

// clearFlood removes what a flood left in the mailbox, as a subagent that
// gave up would: its requests not yet answered (the broker withdraws
// their asks on its next sweep) and the responses it never collected. It
// returns how many of its requests were still waiting.
func clearFlood(ctx context.Context, layout mailbox.Layout, target string, ids []string) (waiting int, err error) {
	var errs []error
	for i, id := range ids {
		if i%1024 == 0 && ctx.Err() != nil {
			return waiting, context.Cause(ctx)
		}
		if path, perr := layout.RequestPath(target, id); perr == nil {
			if rerr := os.Remove(path); rerr == nil {
				waiting++
			} else if !errors.Is(rerr, os.ErrNotExist) {
				errs = append(errs, rerr)
			}
		}
		if path, perr := layout.ResponsePath(target, id); perr == nil {
			if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				errs = append(errs, rerr)
			}
		}
	}
	return waiting, errors.Join(errs...)
}
