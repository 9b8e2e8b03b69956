package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/seed6639df8c/courier/authorizer"
	"github.com/seed6639df8c/courier/intent"
	"github.com/seed6639df8c/courier/rules"
)

const intentUsage = `
User intent (--intent FILE): the transcript of the session this broker
serves (pi's session file, Claude Code's or Codex's transcript_path),
read as it grows. Only the text of user and assistant turns is taken,
and compaction summaries marked derived; no tool input or output, no
thinking, nothing the agent's harness injected. The newest
--intent-budget bytes reach only the authorizer links the config
discloses "conversation" to, as evidence of what the user asked for; the
text is never written to the review log, nor shown to any other link.
`

// intentFlags are broker serve's flags for the serving session's
// transcript.
type intentFlags struct {
	path, format *string
	budget       *int
}

func addIntentFlags(fs *flag.FlagSet) intentFlags {
	return intentFlags{
		path: fs.String("intent", "", "the serving session's transcript, whose user and assistant text reaches the links that disclose \"conversation\" (never the review log); see User intent above"),
		format: fs.String("intent-format", intent.FormatAuto,
			"the transcript's format: "+strings.Join(intent.Formats, ", ")),
		budget: fs.Int("intent-budget", intent.DefaultBudget, fmt.Sprintf("bytes of the transcript's newest text a link is given (%d to %d)", intent.MinBudget, intent.MaxBudget)),
	}
}

// intentWarmup bounds the first read of the transcript at start.
const intentWarmup = 10 * time.Second

// open opens the transcript of --intent, refusing options out of range
// (a usage error); nil without --intent.
func (f intentFlags) open() (*intent.Reader, error) {
	if *f.path == "" {
		return nil, nil
	}
	r, err := intent.Open(*f.path, intent.Options{Format: *f.format, Budget: *f.budget})
	if err != nil {
		return nil, fmt.Errorf("--intent: %w", err)
	}
	return r, nil
}

// provider returns the chain's conversation provider of r, or nil when r
// is nil or no link of the chain discloses "conversation" (then the
// transcript is never read). The transcript is first read in the
// background (a long one takes several reads to reach its end), and what
// the operator must know is said on stderr.
func (f intentFlags) provider(ctx context.Context, r *intent.Reader, chain []rules.AuthorizerLink, stderr io.Writer) func() *authorizer.Conversation {
	if r == nil {
		return nil
	}
	var readers []string
	for _, l := range chain {
		if l.DiscloseConversation {
			readers = append(readers, l.Name)
		}
	}
	if len(readers) == 0 {
		fmt.Fprintf(stderr, "broker: warning: --intent %s: no authorizer link discloses \"conversation\"; the transcript is not read\n", *f.path)
		return nil
	}
	fmt.Fprintf(stderr, "broker: intent: %s (format %s, %d bytes) for %s\n", *f.path, *f.format, *f.budget, strings.Join(readers, ", "))
	go warmUp(ctx, r, *f.path, stderr)
	return conversationOf(r)
}

// conversationOf turns the reader's snapshot into the evidence's
// conversation: nil when there is none, so a link is never told the user
// said nothing.
func conversationOf(r *intent.Reader) func() *authorizer.Conversation {
	return func() *authorizer.Conversation {
		items := r.Snapshot()
		if len(items) == 0 {
			return nil
		}
		c := &authorizer.Conversation{Items: make([]authorizer.ConversationItem, len(items))}
		for i, it := range items {
			c.Items[i] = authorizer.ConversationItem{Role: it.Role, Text: it.Text, Derived: it.Derived}
		}
		return c
	}
}

// warmUp reads the transcript to its end once, within intentWarmup, and
// says what it found.
func warmUp(ctx context.Context, r *intent.Reader, path string, stderr io.Writer) {
	deadline := time.Now().Add(intentWarmup)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		r.Snapshot()
		if st := r.Stats(); st.CaughtUp || st.Err != nil {
			break
		}
	}
	st := r.Stats()
	switch {
	case errors.Is(st.Err, fs.ErrNotExist):
		fmt.Fprintf(stderr, "broker: notice: --intent %s does not exist yet; it is read once it does\n", path)
	case st.Err != nil:
		fmt.Fprintf(stderr, "broker: warning: --intent: %v; links get no conversation until it can be read\n", st.Err)
	case !st.CaughtUp:
		fmt.Fprintf(stderr, "broker: notice: --intent %s: not read to its end in %s; links get no conversation until it is\n", path, intentWarmup)
	case st.Format == "" && st.Lines > 0:
		fmt.Fprintf(stderr, "broker: warning: --intent %s: not a transcript of pi, Claude Code or Codex (%d lines read); links get no conversation\n", path, st.Lines)
	}
}
