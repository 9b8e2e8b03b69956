"""courier-authz-denylist.pyz: a deny-list authorizer plugin in Python.

The operator's regular expressions are checked against the child-fixed
facts of each ask, as cmd/courier-authz-denylist (Go) does: a match denies
with a teaching reason, anything else defers. Unlike the Go example it can
also allow (--allow), so that an operator can delegate a narrow set of asks.

Flags (the Go example's, in their --name VALUE form, plus --allow):

  --deny REGEX     deny values matching REGEX (repeatable)
  --reason TEXT    the reason --deny patterns give (default: a generic
                   teaching reason naming the pattern)
  --surface S      limit --deny patterns to surface S (repeatable)
  --rules FILE     more deny rules: {"rules": [{"pattern", "reason", "surfaces"}]}
                   (the Go example's file format; keep it under /etc/courier,
                   which a confined plugin may read)
  --allow REGEX    allow an ask that no deny rule matched when every one of
                   its values matches some --allow pattern (repeatable); the
                   broker still caps an allow on path surfaces to defer

Patterns are Python regular expressions (re.search, unanchored), not Go's
RE2: the common syntax is the same, but Python's engine backtracks, so a
pattern such as (a+)+$ can take exponential time on a value the child
chose. The broker's timeoutMs bounds that: the call fails into the link's
failure verdict.

Without any rule it exits with status 2 before the handshake, which the
broker reports as a plugin that did not start.
"""

import argparse
import json
import re
import sys

import courier_plugin
from courier_plugin import ALLOW, DENY, DEFER

NAME = "courier-authz-denylist-py"
VERSION = "1"


class Rule:
    """One deny rule."""

    def __init__(self, pattern, reason="", surfaces=()):
        self.pattern = pattern
        self.reason = reason.strip()
        self.surfaces = list(surfaces)

    def applies(self, surface, display_surface):
        return not self.surfaces or surface in self.surfaces or display_surface in self.surfaces

    def reason_for(self, value):
        if self.reason:
            return self.reason
        if len(value) > 120:
            value = value[:117] + "..."
        return (
            "The operator's deny-list refuses %s (it matches /%s/). Do not retry it or work "
            "around it: choose another approach, or tell the user what you need and why."
            % (json.dumps(value, ensure_ascii=False), self.pattern.pattern)
        )


class DenyList:
    """Denies asks that match a rule, allows asks every value of which an
    allow pattern matches, defers the rest."""

    def __init__(self, rules, allow):
        self.rules = rules
        self.allow = allow

    def describe(self):
        summary = "denies asks matching %d operator pattern(s)" % len(self.rules)
        if self.allow:
            summary += "; allows asks whose every value matches one of %d pattern(s)" % len(self.allow)
        else:
            summary += "; never allows"
        return NAME, VERSION, summary

    def authorize(self, evidence):
        surface = courier_plugin.envelope_surface(evidence)
        values = courier_plugin.candidates(evidence)
        for rule in self.rules:
            if not rule.applies(surface, evidence.display_surface):
                continue
            for value in values:
                if rule.pattern.search(value):
                    return DENY, rule.reason_for(value)
        if self.allow and values and all(any(p.search(v) for p in self.allow) for v in values):
            return ALLOW, ""
        return DEFER, ""


def parse_rules_file(data, path):
    """Reads {"rules": [{"pattern", "reason", "surfaces"}]}, strictly, as the
    Go example does: unknown keys and empty patterns are errors."""
    try:
        doc = json.loads(data)
    except ValueError as err:
        raise ValueError("%s: %s" % (path, err)) from None
    if not isinstance(doc, dict) or set(doc) - {"rules"}:
        raise ValueError('%s: want an object with one key, "rules"' % path)
    rules = []
    for i, entry in enumerate(doc.get("rules") or []):
        where = "%s: rules[%d]" % (path, i)
        if not isinstance(entry, dict) or set(entry) - {"pattern", "reason", "surfaces"}:
            raise ValueError('%s: want an object with "pattern", "reason", "surfaces"' % where)
        pattern = entry.get("pattern", "")
        reason = entry.get("reason", "")
        surfaces = entry.get("surfaces") or []
        if not isinstance(pattern, str) or not isinstance(reason, str):
            raise ValueError("%s: pattern and reason are strings" % where)
        if not isinstance(surfaces, list) or not all(isinstance(s, str) for s in surfaces):
            raise ValueError("%s.surfaces: want a list of strings" % where)
        if pattern == "":
            raise ValueError("%s.pattern: empty (it would match everything)" % where)
        try:
            compiled = re.compile(pattern)
        except re.error as err:
            raise ValueError("%s.pattern: %s" % (where, err)) from None
        rules.append(Rule(compiled, reason, surfaces))
    return rules


def build(argv):
    """The authorizer the flags describe; raises ValueError."""
    parser = argparse.ArgumentParser(prog=NAME, add_help=False)
    parser.add_argument("--deny", action="append", default=[])
    parser.add_argument("--reason", default="")
    parser.add_argument("--surface", action="append", default=[])
    parser.add_argument("--rules", default="")
    parser.add_argument("--allow", action="append", default=[])
    args, extra = parser.parse_known_args(argv)
    if extra:
        raise ValueError("unknown arguments %r" % extra)

    def compile_flag(flag, pattern):
        if pattern == "":
            raise ValueError("%s: empty pattern (it would match everything)" % flag)
        try:
            return re.compile(pattern)
        except re.error as err:
            raise ValueError("%s %r: %s" % (flag, pattern, err)) from None

    rules = [Rule(compile_flag("--deny", d), args.reason, args.surface) for d in args.deny]
    if args.rules:
        with open(args.rules, encoding="utf-8") as f:
            rules.extend(parse_rules_file(f.read(), args.rules))
    allow = [compile_flag("--allow", a) for a in args.allow]
    if not rules and not allow:
        raise ValueError("no rules: give --deny REGEX, --rules FILE or --allow REGEX")
    return DenyList(rules, allow)


def main(argv=None):
    try:
        authz = build(sys.argv[1:] if argv is None else argv)
    except (ValueError, OSError) as err:
        # Before the handshake, on stderr, where the broker logs it.
        sys.stderr.write("%s: %s\n" % (NAME, err))
        return 2
    return courier_plugin.serve(authz)


if __name__ == "__main__":
    sys.exit(main())
