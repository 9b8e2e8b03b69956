package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/audit"
	"github.com/seed6639df8c/courier/internal/filewatch"
	"github.com/seed6639df8c/courier/provenance"
)

// auditList holds broker audit's listing flags (--list and its filters).
type auditList struct {
	list, follow                            *bool
	decider, agent, surface, outcome, since *string
	now                                     func() time.Time
}

func listFlags(fs *flag.FlagSet) *auditList {
	return &auditList{
		list:    fs.Bool("list", false, "print the decisions one per line, newest last, instead of the census"),
		follow:  fs.Bool("follow", false, "with --list: keep listing the decisions logged after, until interrupted (implies --list)"),
		decider: fs.String("decider", "", "with --list: only this decider's decisions: "+strings.Join(deciderNames, ", ")+", or authorizer:NAME"),
		agent:   fs.String("agent", "", "with --list: only the decisions on this agent's asks"),
		surface: fs.String("surface", "", "with --list: only the decisions on this surface (bash, path_write, …)"),
		outcome: fs.String("outcome", "", "with --list: only approved or only denied decisions"),
		since:   fs.String("since", "", "with --list: only the decisions since a time back from now (1h, 30m) or an RFC 3339 time"),
		now:     time.Now,
	}
}

// deciderNames are the deciders --decider knows by kind.
var deciderNames = []string{
	string(provenance.KindUser), string(provenance.KindAuthorizer), string(provenance.KindRule),
	string(provenance.KindSessionApproval), string(provenance.KindYolo), string(provenance.KindInfrastructureRead),
	string(provenance.KindUnavailable), string(provenance.KindGateError), audit.NoDecider,
}

// on reports that a listing was asked for.
func (l *auditList) on() bool { return *l.list || *l.follow }

// check refuses a filter without --list, and a filter that can select
// nothing by a misspelling (an unknown decider or outcome, a bad time).
func (l *auditList) check() error {
	if !l.on() {
		for name, v := range map[string]string{"decider": *l.decider, "agent": *l.agent, "surface": *l.surface, "outcome": *l.outcome, "since": *l.since} {
			if v != "" {
				return fmt.Errorf("--%s filters the listing: add --list", name)
			}
		}
		return nil
	}
	if d := *l.decider; d != "" && !slices.Contains(deciderNames, d) && !strings.HasPrefix(d, string(provenance.KindAuthorizer)+":") {
		return fmt.Errorf("--decider %q: want one of %s, or authorizer:NAME", d, strings.Join(deciderNames, ", "))
	}
	if o := *l.outcome; o != "" && o != audit.OutcomeApproved && o != audit.OutcomeDenied {
		return fmt.Errorf("--outcome %q: want %s or %s", o, audit.OutcomeApproved, audit.OutcomeDenied)
	}
	if *l.since != "" {
		if _, err := audit.ParseSince(*l.since, l.now()); err != nil {
			return err
		}
	}
	return nil
}

// filter is the listing's audit.Filter.
func (l *auditList) filter() audit.Filter {
	f := audit.Filter{Decider: *l.decider, Agent: *l.agent, Surface: *l.surface, Outcome: *l.outcome}
	if *l.since != "" {
		f.Since, _ = audit.ParseSince(*l.since, l.now()) // checked by check
	}
	return f
}

// runAuditList prints the decisions of the log at path (- for stdin),
// then, with --follow, those logged after, until ctx is done (SIGINT,
// SIGTERM).
func runAuditList(ctx context.Context, l *auditList, path string, asJSON bool, stdin io.Reader, stdout, stderr io.Writer) int {
	ls := &audit.Lister{Filter: l.filter(), Emit: func(d audit.Listed) error {
		if asJSON {
			return d.WriteJSON(stdout)
		}
		return d.WriteText(stdout)
	}}
	var err error
	switch {
	case path == "-" && *l.follow:
		fmt.Fprintln(stderr, "broker audit: --follow needs a log file, not stdin (-)")
		return exitUsage
	case path == "-":
		if err = audit.ListReader(stdin, ls); err == nil {
			err = ls.Flush()
		}
	case *l.follow:
		if _, serr := os.Stat(path); serr != nil && !errors.Is(serr, os.ErrNotExist) {
			fmt.Fprintf(stderr, "broker audit: %v\n", serr)
			return exitUsage
		}
		err = audit.Follow(ctx, path, ls, filewatch.Options{OnError: func(err error) {
			fmt.Fprintf(stderr, "broker audit: %v\n", err)
		}})
	default:
		if _, serr := os.Stat(path); serr != nil {
			fmt.Fprintf(stderr, "broker audit: %v\n", serr)
			return exitUsage
		}
		var files []string
		files, err = audit.List(path, ls)
		if err == nil {
			fmt.Fprintf(stderr, "broker audit: files read: %s\n", strings.Join(files, ", "))
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "broker audit: reading %s: %v\n", path, err)
		return 1
	}
	return 0
}

// runAuditShadow prints the shadow agreement report of the log at path
// (- for stdin) and its rotation.
func runAuditShadow(l *auditList, path string, asJSON bool, stdin io.Reader, stdout, stderr io.Writer) int {
	if l.on() {
		fmt.Fprintln(stderr, "broker audit: --shadow prints a report of its own: drop --list or --shadow")
		return exitUsage
	}
	var report audit.ShadowReport
	var err error
	if path == "-" {
		report, err = audit.Shadow(stdin)
	} else {
		if _, serr := os.Stat(path); serr != nil {
			fmt.Fprintf(stderr, "broker audit: %v\n", serr)
			return exitUsage
		}
		report, err = audit.ShadowFile(path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "broker audit: reading %s: %v\n", path, err)
		return 1
	}
	write := report.WriteTable
	if asJSON {
		write = report.WriteJSON
	}
	if err := write(stdout); err != nil {
		fmt.Fprintf(stderr, "broker audit: %v\n", err)
		return 1
	}
	return 0
}
