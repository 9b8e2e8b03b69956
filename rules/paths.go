package rules

import (
	"path"
	"slices"
)

// Path values are matched as the child fixed them, but never as written:
// `..`, `.`, `//` and a trailing slash are resolved lexically first, so
// `/srv/app/work/../../../etc/cron.d/evil` is `/etc/cron.d/evil` to every
// rule and grant. Nothing is joined with the broker's working directory (a
// relative value stays relative) and no symbolic link is followed: the
// child resolved those and sent each spelling as an alias, with the
// canonical one as the boundary value. See docs/decisions/0012-path-aliases.md.

// cleanPath is path.Clean, except that the empty value stays empty.
func cleanPath(v string) string {
	if v == "" {
		return v
	}
	return path.Clean(v)
}

// cleanPathQuery returns q with its match values and boundary value
// cleaned. It allocates only when a value changes.
func cleanPathQuery(q Query) Query {
	for i, v := range q.MatchValues {
		if c := cleanPath(v); c != v {
			values := make([]string, len(q.MatchValues))
			copy(values, q.MatchValues[:i])
			for j := i; j < len(values); j++ {
				values[j] = cleanPath(q.MatchValues[j])
			}
			q.MatchValues = values
			break
		}
	}
	if q.BoundaryValue != nil {
		if c := cleanPath(*q.BoundaryValue); c != *q.BoundaryValue {
			q.BoundaryValue = &c
		}
	}
	return q
}

// evalAliases resolves the aliases of one path on one surface: each alias
// (and the boundary value) is looked up alone, and the most restrictive
// result wins. A deny on any alias denies (the first one found); an allow
// needs the canonical path allowed, which is the boundary value when the
// child sent one and otherwise every alias; anything else asks. pi lets
// the last rule matching any alias decide, so that a symbolic link into
// an allowed tree could carry a write into a denied one.
func evalAliases(cfg, sess []compiledRule, surface string, values []string, boundary *string, tr *trace) Resolution {
	if len(values) == 0 && boundary == nil {
		values = anyValue
	}
	var (
		first, deny, ask, canon      Resolution
		haveDeny, haveAsk, haveCanon bool
	)
	note := func(i int, d Resolution) {
		switch {
		case d.Action == Deny && !haveDeny:
			deny, haveDeny = d, true
		case d.Action != Allow && d.Action != Deny && !haveAsk:
			ask, haveAsk = d, true
		}
		if i == 0 {
			first = d
		}
	}
	for i := range values {
		if slices.Contains(values[:i], values[i]) {
			continue // an alias the child sent twice (cleaning may make two equal)
		}
		d := lookup(cfg, sess, surface, values[i:i+1:i+1], tr)
		note(i, d)
		if boundary != nil && !haveCanon && values[i] == *boundary {
			canon, haveCanon = d, true
		}
	}
	if boundary != nil && !haveCanon {
		b := [1]string{*boundary}
		canon, haveCanon = lookup(cfg, sess, surface, b[:], tr), true
		note(len(values), canon)
	}
	switch {
	case haveDeny:
		return deny
	case haveCanon:
		return canon
	case haveAsk:
		return ask
	}
	return first
}

// pathSpellings checks a path surface's answer d against the spellings the
// child left unexpanded: for the deny lookup only, each value is also
// tested with `~`, `$HOME` and `${HOME}` expanded and, when relative,
// joined to the requester's absolute cwd, so that `~/.ssh/x` or
// `.ssh/x` from the home directory meets the deny written for
// `/home/ada/.ssh/*`. A relative value the broker cannot place (no
// absolute cwd, no absolute boundary) can at most ask: no rule may allow
// a path it cannot see.
func (p *Policy) pathSpellings(cfg []compiledRule, q Query, d Resolution, tr *trace) Resolution {
	if d.Action == Deny {
		return d
	}
	cwd := ""
	if path.IsAbs(q.Cwd) {
		cwd = path.Clean(q.Cwd)
	}
	var extra []string
	unplaced := false
	spell := func(v string) {
		e := expandHome(v, p.home)
		if e != "" && !path.IsAbs(e) {
			if cwd == "" {
				unplaced = true
				return
			}
			e = cwd + "/" + e
		}
		if e = cleanPath(e); e != v && !slices.Contains(extra, e) {
			extra = append(extra, e)
		}
	}
	for _, v := range q.MatchValues {
		spell(v)
	}
	if q.BoundaryValue != nil {
		spell(*q.BoundaryValue)
	}
	if len(extra) > 0 {
		if dd := p.evalSurface(cfg, nil, q.Surface, extra, nil, tr); dd.Action == Deny {
			return dd
		}
	}
	if unplaced && d.Action == Allow && (q.BoundaryValue == nil || !path.IsAbs(*q.BoundaryValue)) {
		d.Action = Ask
		if tr != nil {
			tr.notes = append(tr.notes, "a relative path value without an absolute cwd can at most ask: the broker cannot tell where it is")
		}
	}
	return d
}
