package bashunits

import (
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// The floor sentinels. The first four are pi's (its child sends them as
// accessIntent.floor and askingUnits[].floor); FloorWritesFile is
// courier's own, which any pi parent treats as a floor like the others.
const (
	FloorIndirection = "<indirection-bash-wrapper>"
	FloorOpaque      = "<opaque-bash-wrapper>"
	FloorUnparsed    = "<unparsed-bash-subtree>"
	FloorUnparseable = "<unparseable-bash-command>"
	FloorWritesFile  = "<file-writing-redirection>"
)

// Unit is one simple command of a command line.
type Unit struct {
	// Command is the unit as written: assignments, words and redirections
	// in source order, separated by one space.
	Command string
	// Literal is Command with quotes and escapes removed, when every word
	// is a literal and that differs from Command; empty otherwise.
	Literal string
	// Floor is a floor sentinel when the unit cannot be judged by a rule
	// alone, empty otherwise.
	Floor string
	// Why says in a few words what raised the floor ("runs another
	// command: sudo"), for a prompt or a log; empty without a floor.
	Why string
	// Writes lists the files the unit's redirections write, as written.
	Writes []string
	// Targets are the same files in the form of Words: where the unit
	// writes whatever its command is.
	Targets []string
	// Words are the unit's words as bash would see them before expansion:
	// the assignments' values, the arguments and the redirection targets
	// (here-documents aside), in the order the parser visits them, each
	// with its quotes and escapes removed (ANSI-C quotes decoded) and its
	// expansions left as written, each bracketed by Mark (`"$HOME"/.pi`
	// is Mark `$HOME` Mark `/.pi`), for a reader that looks for paths.
	// For an unparseable line they are its blank-separated fields without
	// quote characters: a guess that errs towards seeing paths.
	Words []string
	// Args are the command name and its arguments, one entry per word of
	// the command, in the form of Words; nil for an unparseable line and
	// a unit without a command.
	Args []string
	// Name is the command name in the same form (`'rm'` is `rm`), empty
	// for a unit without one: redirections alone, a declaration, a test,
	// an unparseable line.
	Name string
}

// Limits past which a line is not parsed at all but floored whole: the
// parser recurses once per nesting level, and a request file may hold a
// megabyte of `$(`.
const (
	// MaxLen is the longest line parsed, in bytes.
	MaxLen = 64 << 10
	// MaxNesting bounds the openers (`(`, `{`, `[`, backquote) in a line.
	MaxNesting = 256
	// MaxUnits bounds the units of a line: past it nobody reviews them one
	// by one, so the line is one unparseable unit.
	MaxUnits = 128
)

var parsers = sync.Pool{New: func() any {
	return syntax.NewParser(syntax.Variant(syntax.LangBash))
}}

// Split returns the units of line, in source order, hosts before the
// substitutions they hold. It never fails: a line it cannot parse is one
// unit floored with FloorUnparseable. The result is never empty.
func Split(line string) []Unit {
	if len(line) > MaxLen || openers(line) > MaxNesting {
		return unparseable(line, "too large or too deeply nested to parse")
	}
	if strings.IndexByte(line, 0) >= 0 {
		// An argv cannot hold NUL: what runs is cut there, not what was
		// judged.
		return unparseable(line, "holds a NUL byte")
	}
	if u, ok := plain(line); ok {
		return []Unit{u}
	}
	return parsed(line)
}

// plain is the fast path for the commonest ask, one command of plain
// words (`git status --short`, `go test ./...`): nothing in it is an
// operator, a quote, an expansion, a glob or a comment, so its words are
// its fields and the parser would say the same (FuzzSplit holds the two to
// it). It saves the parse, a few microseconds and dozens of allocations on
// both sides of every such ask.
func plain(line string) (Unit, bool) {
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte(" _./,:@%+=^~-", c) >= 0:
		default:
			return Unit{}, false
		}
	}
	fields := strings.Fields(line)
	if len(fields) == 0 || strings.IndexByte(fields[0], '=') >= 0 || reserved[fields[0]] {
		return Unit{}, false
	}
	words := make([]word, len(fields))
	for i, f := range fields {
		words[i] = word{lit: f, ok: true}
	}
	u := Unit{Command: strings.Join(fields, " "), Words: fields, Args: fields, Name: fields[0]}
	u.Floor, u.Why = commandFloor(words)
	return u, true
}

// reserved are bash's reserved words, and the builtins the parser reads
// as clauses of their own (let, declarations): each changes what follows.
var reserved = map[string]bool{
	"let": true, "declare": true, "local": true, "export": true, "readonly": true,
	"typeset": true, "nameref": true,
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "case": true, "esac": true,
	"for": true, "select": true, "while": true, "until": true, "do": true, "done": true,
	"in": true, "function": true, "time": true, "coproc": true, "!": true,
	"{": true, "}": true, "[[": true, "]]": true,
}

// parsed splits line with the shell parser.
func parsed(line string) []Unit {
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(line), "")
	parsers.Put(p)
	if err != nil {
		return unparseable(line, "does not parse as bash")
	}
	s := splitter{src: line}
	s.stmts(f.Stmts)
	switch {
	case len(s.units) == 0:
		return unparseable(line, "holds no command")
	case len(s.units) > MaxUnits:
		return unparseable(line, "holds too many commands to judge one by one")
	}
	return s.units
}

// Commands returns the Command of each unit.
func Commands(units []Unit) []string {
	out := make([]string, len(units))
	for i, u := range units {
		out[i] = u.Command
	}
	return out
}

func unparseable(line, why string) []Unit {
	var words []string
	if len(line) <= MaxLen {
		for _, f := range strings.Fields(line) {
			words = append(words, unquoter.Replace(f))
		}
	}
	return []Unit{{Command: line, Floor: FloorUnparseable, Why: why, Words: words}}
}

// unquoter takes the quote characters out of an unparseable line's fields.
var unquoter = strings.NewReplacer(`"`, "", "'", "", `\`, "")

func openers(line string) int {
	n := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '(', '{', '[', '`':
			n++
		}
	}
	return n
}

type splitter struct {
	src   string
	units []Unit
}

func (s *splitter) text(n syntax.Node) string {
	return s.src[n.Pos().Offset():n.End().Offset()]
}

func (s *splitter) stmts(list []*syntax.Stmt) {
	for _, st := range list {
		s.stmt(st)
	}
}

func (s *splitter) stmt(st *syntax.Stmt) {
	switch c := st.Cmd.(type) {
	case nil:
		// Redirections alone: `> f` truncates f.
		s.simple(st, nil, nil)
	case *syntax.CallExpr:
		s.simple(st, c.Assigns, c.Args)
	case *syntax.BinaryCmd:
		s.stmt(c.X)
		s.stmt(c.Y)
		s.compoundRedirs(st)
	case *syntax.Subshell:
		s.stmts(c.Stmts)
		s.compoundRedirs(st)
	case *syntax.Block:
		s.stmts(c.Stmts)
		s.compoundRedirs(st)
	case *syntax.IfClause:
		for ic := c; ic != nil; ic = ic.Else {
			s.stmts(ic.Cond)
			s.stmts(ic.Then)
		}
		s.compoundRedirs(st)
	case *syntax.WhileClause:
		s.stmts(c.Cond)
		s.stmts(c.Do)
		s.compoundRedirs(st)
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			for _, w := range l.Items {
				s.nested(w)
			}
		case *syntax.CStyleLoop:
			s.add(Unit{Command: s.text(l), Floor: FloorUnparsed, Why: "arithmetic loop"})
			s.nested(l)
		}
		s.stmts(c.Do)
		s.compoundRedirs(st)
	case *syntax.CaseClause:
		s.nested(c.Word)
		for _, it := range c.Items {
			for _, w := range it.Patterns {
				s.nested(w)
			}
			s.stmts(it.Stmts)
		}
		s.compoundRedirs(st)
	case *syntax.FuncDecl:
		// The body runs wherever the function is called.
		s.stmt(c.Body)
		s.compoundRedirs(st)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			s.stmt(c.Stmt)
		}
		s.compoundRedirs(st)
	case *syntax.CoprocClause:
		s.stmt(c.Stmt)
		s.compoundRedirs(st)
	case *syntax.ArithmCmd, *syntax.LetClause:
		s.whole(st, FloorUnparsed, "arithmetic")
	case *syntax.TestClause:
		floor, why := "", ""
		if hasArithmTest(c.X) {
			floor, why = FloorUnparsed, "arithmetic comparison"
		}
		s.whole(st, floor, why)
	case *syntax.DeclClause:
		s.whole(st, "", "")
	default:
		s.whole(st, FloorUnparsed, "a construct courier does not judge")
	}
}

// whole makes the statement's command one unit, as written, with its
// redirections, and adds the substitutions inside it.
func (s *splitter) whole(st *syntax.Stmt, floor, why string) {
	parts := []string{s.text(st.Cmd)}
	u := Unit{Floor: floor, Why: why}
	for _, r := range st.Redirs {
		parts = append(parts, s.redirText(r))
		s.redirect(&u, r)
	}
	u.Command = strings.Join(parts, " ")
	u.Words = s.words(st)
	at := len(s.units)
	s.add(u)
	s.nestedFloor(at, st)
}

// compoundRedirs adds the redirections of a compound command as a unit of
// their own when one writes a file, and the substitutions inside them.
func (s *splitter) compoundRedirs(st *syntax.Stmt) {
	if len(st.Redirs) == 0 {
		return
	}
	var u Unit
	parts := make([]string, 0, len(st.Redirs))
	for _, r := range st.Redirs {
		parts = append(parts, s.redirText(r))
		s.redirect(&u, r)
		s.nested(r)
	}
	if u.Floor != "" {
		u.Command = strings.Join(parts, " ")
		for _, r := range st.Redirs {
			u.Words = append(u.Words, s.words(r)...)
		}
		s.add(u)
	}
}

// simple makes one unit of a simple command.
func (s *splitter) simple(st *syntax.Stmt, assigns []*syntax.Assign, args []*syntax.Word) {
	type piece struct {
		off     uint
		written string
		literal string
		ok      bool
	}
	pieces := make([]piece, 0, len(assigns)+len(args)+len(st.Redirs))
	u := Unit{Words: make([]string, 0, len(assigns)+len(args)+len(st.Redirs))}
	if len(args) > 0 {
		u.Args = make([]string, 0, len(args))
	}
	// addWord adds w to the unit's words: its literal value when it has
	// one (computed once, here), else its shallow form and the words
	// nested in it.
	addWord := func(w *syntax.Word, lit string, ok bool) {
		if ok {
			u.Words = append(u.Words, lit)
		} else {
			u.Words = append(u.Words, s.words(w)...)
		}
	}
	for _, a := range assigns {
		if a.Array != nil {
			u.Words = append(u.Words, s.words(a.Array)...)
		}
		lit, ok := "", false
		if a.Value != nil {
			val, valOK := literal(a.Value)
			addWord(a.Value, val, valOK)
		}
		if a.Index == nil && a.Array == nil && !a.Naked {
			val := ""
			if a.Value != nil {
				val, ok = literal(a.Value)
			} else {
				ok = true
			}
			lit = a.Name.Value + "=" + val
			if a.Append {
				lit = a.Name.Value + "+=" + val
			}
		}
		pieces = append(pieces, piece{a.Pos().Offset(), s.text(a), lit, ok})
	}
	argWords := make([]word, len(args))
	for i, w := range args {
		lit, ok := literal(w)
		pieces = append(pieces, piece{w.Pos().Offset(), s.text(w), lit, ok})
		argWords[i] = word{lit: lit, ok: ok, expands: expands(w)}
		if i == 0 {
			u.Name = lit
			if !ok {
				u.Name = s.shallow(w, false)
			}
		}
		if ok {
			u.Args = append(u.Args, lit)
		} else {
			u.Args = append(u.Args, s.shallow(w, true))
		}
		addWord(w, lit, ok)
	}
	for _, r := range st.Redirs {
		lit, ok := "", false
		heredoc := r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc
		if r.N == nil || isDigits(r.N.Value) {
			// {var}> names a variable, whose literal form is not a word.
			var target string
			if target, ok = literal(r.Word); ok {
				lit = s.src[r.Pos().Offset():r.Word.Pos().Offset()] + target
			}
			if !heredoc {
				addWord(r.Word, target, ok)
			}
		} else if !heredoc {
			u.Words = append(u.Words, s.words(r.Word)...)
		}
		pieces = append(pieces, piece{r.Pos().Offset(), s.redirText(r), lit, ok})
		s.redirect(&u, r)
	}
	slices.SortStableFunc(pieces, func(a, b piece) int { return int(a.off) - int(b.off) })
	written := make([]string, len(pieces))
	lits := make([]string, len(pieces))
	allLit := true
	for i, p := range pieces {
		written[i], lits[i] = p.written, p.literal
		allLit = allLit && p.ok
	}
	u.Command = strings.Join(written, " ")
	if allLit {
		if l := strings.Join(lits, " "); l != u.Command {
			u.Literal = l
		}
	}
	if len(args) > 0 {
		if floor, why := commandFloor(argWords); floor != "" {
			u.Floor, u.Why = floor, why
		}
	}
	at := len(s.units)
	s.add(u)
	s.nestedFloor(at, st)
}

// redirText is a redirection as written, a here-document by its operator
// and delimiter only.
func (s *splitter) redirText(r *syntax.Redirect) string {
	return s.src[r.Pos().Offset():r.Word.End().Offset()]
}

// redirect floors u when r writes a file.
func (s *splitter) redirect(u *Unit, r *syntax.Redirect) {
	target, lit := literal(r.Word)
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		if lit && harmlessTarget(target) {
			return
		}
	case syntax.DplOut:
		// `>&2` duplicates a descriptor; `>&file` writes file.
		if lit && (isDigits(target) || target == "-" || harmlessTarget(target)) {
			return
		}
	default:
		return
	}
	u.Writes = append(u.Writes, s.text(r.Word))
	if lit {
		u.Targets = append(u.Targets, target)
	} else {
		u.Targets = append(u.Targets, s.shallow(r.Word, true))
	}
	if u.Floor == "" {
		u.Floor, u.Why = FloorWritesFile, "writes "+s.text(r.Word)
	}
}

func harmlessTarget(t string) bool {
	return t == "/dev/null" || t == "/dev/stdout" || t == "/dev/stderr"
}

func isDigits(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

// nested adds the units inside node: the commands of every command or
// process substitution, wherever it sits. It reports whether node holds
// arithmetic bash may evaluate.
func (s *splitter) nested(node syntax.Node) (arithmetic bool) {
	syntax.Walk(node, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			s.stmts(n.Stmts)
			return false
		case *syntax.ProcSubst:
			s.stmts(n.Stmts)
			return false
		case *syntax.ArithmExp:
			arithmetic = true
		case *syntax.ParamExp:
			if n.Index != nil || n.Slice != nil {
				arithmetic = true
			}
		case *syntax.Assign:
			if n.Index != nil {
				arithmetic = true
			}
		case *syntax.ArrayElem:
			if n.Index != nil {
				arithmetic = true
			}
		}
		return true
	})
	return arithmetic
}

// nestedFloor adds the units nested in st's command and redirections, and
// floors the unit at index at when they hold arithmetic.
func (s *splitter) nestedFloor(at int, st *syntax.Stmt) {
	arith := false
	if st.Cmd != nil {
		arith = s.nested(st.Cmd)
	}
	for _, r := range st.Redirs {
		arith = s.nested(r) || arith
	}
	if arith {
		// The unit's floor goes first: arithmetic may run a command, a
		// redirection only writes.
		u := &s.units[at]
		if u.Floor == "" || u.Floor == FloorWritesFile {
			u.Floor, u.Why = FloorUnparsed, "arithmetic"
		}
	}
}

func (s *splitter) add(u Unit) {
	s.units = append(s.units, u)
}

func hasArithmTest(x syntax.TestExpr) bool {
	found := false
	syntax.Walk(x, func(n syntax.Node) bool {
		if b, ok := n.(*syntax.BinaryTest); ok {
			switch b.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				found = true
			}
		}
		return !found
	})
	return found
}
