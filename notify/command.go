package notify

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// ParseCommand splits the operator's --notify-cmd into the program and its
// arguments, the way a POSIX shell splits a line of plain words: blanks
// separate words, and quotes group them ('…' takes everything literally;
// "…" too, but for \" \\ \$ \`; a backslash outside quotes takes the next
// character literally). Nothing else of a shell is there: no variables, no
// globs, no pipes, no redirections. So that the command never means
// something else than it would to a shell, characters a shell would
// interpret outside quotes ($ ` | & ; < > ( ) * ? [, and ~ or # at the
// start of a word, = in the program's name) and $ or ` inside double
// quotes are refused, with the advice to quote them or to give a shell
// yourself: --notify-cmd 'sh -c "notify-phone \"$COURIER_ASK_SUMMARY\""'.
//
// The command is run directly with these words; the ask reaches it only
// through its environment (see the package doc), never through its
// words, so a child's text is never parsed by a shell unless the
// operator's own command hands it to one.
func ParseCommand(s string) ([]string, error) {
	const advice = "the command runs without a shell: quote it, or give a shell yourself (sh -c '…')"
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	end := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			end()
			i++
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("the ' at column %d is not closed", i+1)
			}
			cur.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += j + 2
		case c == '"':
			start := i
			i++
			inWord = true
			closed := false
			for i < len(s) && !closed {
				switch d := s[i]; {
				case d == '"':
					closed = true
					i++
				case d == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
					cur.WriteByte(s[i+1])
					i += 2
				case d == '$' || d == '`':
					return nil, fmt.Errorf("%q at column %d, inside double quotes, is shell syntax: %s", d, i+1, advice)
				default:
					cur.WriteByte(d)
					i++
				}
			}
			if !closed {
				return nil, fmt.Errorf("the \" at column %d is not closed", start+1)
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("the command ends in a backslash")
			}
			if s[i+1] != '\n' {
				cur.WriteByte(s[i+1])
				inWord = true
			}
			i += 2
		case strings.IndexByte("$`|&;<>()*?[", c) >= 0, !inWord && (c == '~' || c == '#'):
			return nil, fmt.Errorf("%q at column %d is shell syntax: %s", c, i+1, advice)
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	end()
	if len(words) == 0 || words[0] == "" {
		return nil, fmt.Errorf("no program to run")
	}
	if strings.Contains(words[0], "=") {
		return nil, fmt.Errorf("%q: a variable assignment before the program is shell syntax: %s, or use env", words[0], advice)
	}
	return words, nil
}

// run runs argv with env added to the broker's environment, its stdin and
// stdout /dev/null and its stderr kept (the start of it) for the error.
// When ctx ends first, the command's process group is killed.
func run(ctx context.Context, argv, env []string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stderr capped
	cmd.Stderr = &stderr
	// A command that leaves a child holding its stderr open must not
	// keep the sink waiting past its timeout.
	cmd.WaitDelay = time.Second
	ownGroup(cmd)
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if msg := clean(strings.TrimSpace(stderr.String()), 200); msg != "" {
		return fmt.Errorf("%w: %s", err, msg)
	}
	return err
}

// capped is an io.Writer that keeps the first capLen bytes written to it.
type capped struct{ b []byte }

const capLen = 1 << 10

func (c *capped) Write(p []byte) (int, error) {
	if room := capLen - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capped) String() string { return string(c.b) }

// desktop sends the batch with notify-send: the title says how many asks
// wait; the body is the batch's text with the markup characters a
// notification server would read (most read a little HTML) escaped.
func desktop(ctx context.Context, path string, b Batch) error {
	title := "courier: a permission ask is waiting"
	if b.Count > 1 {
		title = fmt.Sprintf("courier: %d new permission asks", b.Count)
	}
	body := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(b.Text())
	return run(ctx, []string{path, "--app-name=courier", "--", title, body}, nil)
}
