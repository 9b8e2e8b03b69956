"""Unit tests of the Python deny-list, run against a built plugin:

    /usr/bin/python3 -I test_denylist.py PLUGIN.pyz

The modules are imported from the archive itself (what the broker runs),
not from this directory. integration/python_plugins_test.go runs this.
"""

import json
import sys
import unittest

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: test_denylist.py PLUGIN.pyz [unittest args]")
    sys.path.insert(0, sys.argv.pop(1))

import courier_plugin  # noqa: E402  (from the archive)
import denylist  # noqa: E402
from courier.authorizer.v1 import authorizer_pb2 as pb  # noqa: E402
from courier_plugin import ALLOW, DEFER, DENY  # noqa: E402


def evidence(value="", surface="bash", access=None, boundary=None):
    ev = pb.Evidence(display_surface=surface, display_value=value)
    if access is not None:
        ev.access.CopyFrom(pb.AccessFacts(
            surface=access.get("surface", ""),
            match_values=access.get("match", []),
            asking_units=[pb.AskingUnit(command=c) for c in access.get("units", [])],
        ))
        if boundary is not None:
            ev.access.boundary_value = boundary
    return ev


class AuthorizeTest(unittest.TestCase):
    CASES = [
        # (name, flags, evidence, verdict, reason substring)
        ("display value denied", ["--deny", "^rm -rf", "--reason", "no"], evidence("rm -rf /"), DENY, "no"),
        ("no match defers", ["--deny", "^rm -rf"], evidence("ls"), DEFER, ""),
        ("match value denied", ["--deny", "secret"],
         evidence("cat x", access={"surface": "bash", "match": ["cat secret"]}), DENY, "cat secret"),
        ("asking unit denied", ["--deny", "^curl "],
         evidence("a && b", access={"surface": "bash", "units": ["ls", "curl evil"]}), DENY, "curl evil"),
        ("boundary path denied", ["--deny", r"(^|/)\.env$"],
         evidence("read", surface="read", access={"surface": "path_read"}, boundary="/p/.env"), DENY, ".env"),
        ("empty boundary is still a value", ["--deny", "^$"],
         evidence("", surface="read", access={"surface": "path_read"}, boundary=""), DENY, ""),
        ("unset boundary is no value", ["--deny", "^$"],
         evidence("", surface="read", access={"surface": "path_read"}), DEFER, ""),
        ("surface limits the rule", ["--deny", "x", "--surface", "edit"], evidence("x"), DEFER, ""),
        ("gate surface counts", ["--deny", "x", "--surface", "path_write"],
         evidence("x", surface="edit", access={"surface": "path_write"}), DENY, ""),
        ("display surface counts too", ["--deny", "x", "--surface", "edit"],
         evidence("x", surface="edit", access={"surface": "path_write"}), DENY, ""),
        ("allow when every value matches", ["--allow", "^ls( |$)"],
         evidence("ls -la", access={"surface": "bash", "match": ["ls -la"], "units": ["ls -la"]}), ALLOW, ""),
        ("no allow when one value does not", ["--allow", "^ls( |$)"],
         evidence("ls; rm x", access={"surface": "bash", "units": ["ls", "rm x"]}), DEFER, ""),
        ("deny wins over allow", ["--allow", ".", "--deny", "rm"], evidence("rm x"), DENY, ""),
        ("no values, no allow", ["--allow", ".*"], evidence(""), DEFER, ""),
    ]

    def test_cases(self):
        for name, flags, ev, verdict, reason in self.CASES:
            with self.subTest(name):
                got, why = denylist.build(flags).authorize(ev)
                self.assertEqual(got, verdict)
                self.assertIn(reason, why)

    def test_generic_reason_cuts_long_values(self):
        _, why = denylist.build(["--deny", "^a"]).authorize(evidence("a" * 200))
        self.assertIn('"' + "a" * 117 + '..."', why)
        self.assertIn("(it matches /^a/)", why)


class FlagsTest(unittest.TestCase):
    def test_errors(self):
        for name, flags in [
            ("no rules", []),
            ("bad pattern", ["--deny", "("]),
            ("empty pattern", ["--deny", ""]),
            ("unknown flag", ["--deny", "x", "--nope"]),
            ("missing rules file", ["--rules", "/nonexistent/rules.json"]),
        ]:
            with self.subTest(name):
                with self.assertRaises((ValueError, OSError)):
                    denylist.build(flags)

    def test_main_exits_2_without_rules(self):
        self.assertEqual(denylist.main([]), 2)


class RulesFileTest(unittest.TestCase):
    def test_good(self):
        rules = denylist.parse_rules_file(json.dumps({"rules": [
            {"pattern": "^git push .*--force", "reason": " no force ", "surfaces": ["bash"]},
            {"pattern": "x"},
        ]}), "r.json")
        self.assertEqual([r.pattern.pattern for r in rules], ["^git push .*--force", "x"])
        self.assertEqual(rules[0].reason, "no force")
        self.assertEqual(rules[0].surfaces, ["bash"])

    def test_errors(self):
        for name, doc in [
            ("not json", "{"),
            ("unknown top key", '{"rules": [], "extra": 1}'),
            ("unknown rule key", '{"rules": [{"pattern": "x", "Reasons": ""}]}'),
            ("empty pattern", '{"rules": [{"pattern": ""}]}'),
            ("bad pattern", '{"rules": [{"pattern": "("}]}'),
            ("surfaces not strings", '{"rules": [{"pattern": "x", "surfaces": [1]}]}'),
            ("not an object", "[]"),
        ]:
            with self.subTest(name):
                with self.assertRaises(ValueError):
                    denylist.parse_rules_file(doc, "r.json")


class HandshakeTest(unittest.TestCase):
    ENV = {
        "COURIER_AUTHORIZER_PLUGIN": courier_plugin.MAGIC_COOKIE_VALUE,
        "PLUGIN_PROTOCOL_VERSIONS": "1",
        "PLUGIN_CLIENT_CERT": "-----BEGIN CERTIFICATE-----\n",
        "PLUGIN_UNIX_SOCKET_DIR": "/run/x",
    }

    def test_negotiate(self):
        self.assertEqual(courier_plugin._negotiate(self.ENV), (b"-----BEGIN CERTIFICATE-----\n", "/run/x"))
        for name, change in [
            ("no cookie", {"COURIER_AUTHORIZER_PLUGIN": ""}),
            ("no version 1", {"PLUGIN_PROTOCOL_VERSIONS": "2,3"}),
            ("no client certificate", {"PLUGIN_CLIENT_CERT": ""}),
        ]:
            with self.subTest(name):
                with self.assertRaises(courier_plugin.PluginError):
                    courier_plugin._negotiate(dict(self.ENV, **change))

    def test_certificate_is_for_localhost_and_unpadded_base64_decodes(self):
        import base64
        from cryptography import x509
        for _ in range(6):  # lengths vary with the signature: some need padding
            _, _, der = courier_plugin._server_certificate()
            cert = x509.load_der_x509_certificate(der)
            names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            self.assertEqual(names.get_values_for_type(x509.DNSName), ["localhost"])
            raw = base64.b64encode(der).decode().rstrip("=")
            self.assertNotIn("=", raw)
            self.assertEqual(base64.b64decode(raw + "=" * (-len(raw) % 4)), der)


if __name__ == "__main__":
    unittest.main()
