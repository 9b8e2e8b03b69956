#!/usr/bin/python3
"""Build a courier authorizer plugin written in Python into one executable.

    /usr/bin/python3 build.py --out courier-authz-denylist.pyz
    /usr/bin/python3 build.py --out other.pyz --main other.py

The output is a zip application (python3 -m zipapp's format) starting with
"#!/usr/bin/python3 -I": the main module (denylist.py by default) under its
own name with a __main__.py that runs it, courier_plugin.py, and the Python
code that Debian's protoc and
grpc_python_plugin generate now from plugins/proto. The file is the whole
plugin: the sha256 the operator pins covers the generated code too, and the
plugin needs no directory of its own, which matters because the broker
executes it as /proc/self/fd/3 (nothing can be found relative to that) under
Landlock (it may read its own file and system directories, not the place it
was built in). Its imports resolve inside the zip, found through sys.path[0],
which Python sets to the archive it runs: /proc/self/fd/3, re-opened by
zipimport for each module.

The archive is reproducible: the same sources and the same protoc and
grpc_python_plugin give the same bytes, hence the same pin.

Needs (Debian 12 packages): protobuf-compiler (protoc 3.21: proto3 optional
fields need no flag), protobuf-compiler-grpc (grpc_python_plugin). The
plugin itself needs python3-grpcio, python3-protobuf and
python3-cryptography at run time; see README.md.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
INTERPRETER = "/usr/bin/python3 -I"
# Zip entries get this time, so that a rebuild gives the same bytes.
EPOCH = (1980, 1, 1, 0, 0, 0)


def protos(proto_dir):
    """Every .proto under proto_dir, relative to it, sorted."""
    out = []
    for root, _dirs, files in os.walk(proto_dir):
        for name in files:
            if name.endswith(".proto"):
                out.append(os.path.relpath(os.path.join(root, name), proto_dir))
    return sorted(out)


def generate(proto_dir, out_dir, protoc, grpc_plugin):
    """Runs protoc; returns the generated files relative to out_dir."""
    files = protos(proto_dir)
    if not files:
        raise SystemExit("build.py: no .proto files under %s" % proto_dir)
    cmd = [
        protoc,
        "-I", proto_dir,
        "--python_out=" + out_dir,
        "--grpc_python_out=" + out_dir,
        "--plugin=protoc-gen-grpc_python=" + grpc_plugin,
    ] + files
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit("build.py: %s failed (%d):\n%s" % (" ".join(cmd), result.returncode, result.stderr))
    generated = []
    for root, _dirs, names in os.walk(out_dir):
        for name in names:
            generated.append(os.path.relpath(os.path.join(root, name), out_dir))
    return sorted(generated)


def packages(paths):
    """The __init__.py every package directory of paths needs (zipimport
    does not find namespace packages in every Python 3 version)."""
    inits = set()
    for path in paths:
        parts = path.split(os.sep)[:-1]
        for i in range(1, len(parts) + 1):
            inits.add(os.path.join(*parts[:i], "__init__.py"))
    return sorted(inits - set(paths))


def write_zipapp(out, entries):
    """Writes entries ({archive name: bytes}) as an executable zip app."""
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(("#!%s\n" % INTERPRETER).encode())
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for name in sorted(entries):
                info = zipfile.ZipInfo(name.replace(os.sep, "/"), date_time=EPOCH)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, entries[name])
    # Not writable by group or others: the broker refuses such a plugin.
    os.chmod(tmp, 0o755)
    os.replace(tmp, out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the plugin file to write")
    parser.add_argument("--main", default=os.path.join(HERE, "denylist.py"),
                        help="the plugin's main module (default: denylist.py)")
    parser.add_argument("--proto-dir", default=DEFAULT_PROTO_DIR, help="the protos (default: plugins/proto)")
    parser.add_argument("--protoc", default=shutil.which("protoc") or "protoc")
    parser.add_argument("--grpc-python-plugin", default=shutil.which("grpc_python_plugin") or "grpc_python_plugin")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="courier-pyplugin-") as gen:
        generated = generate(args.proto_dir, gen, args.protoc, args.grpc_python_plugin)
        entries = {}
        for path in generated:
            with open(os.path.join(gen, path), "rb") as f:
                entries[path] = f.read()
    for path in packages(list(entries)):
        entries[path] = b""
    with open(os.path.join(HERE, "courier_plugin.py"), "rb") as f:
        entries["courier_plugin.py"] = f.read()
    # The main module keeps its name, so that tests can import it from the
    # archive; __main__ runs it as a script.
    module = os.path.splitext(os.path.basename(args.main))[0]
    if not module.isidentifier() or module + ".py" in entries or module == "__main__":
        raise SystemExit("build.py: --main %s: want a module name of its own (letters, digits, _)" % args.main)
    with open(args.main, "rb") as f:
        entries[module + ".py"] = f.read()
    entries["__main__.py"] = (
        "import runpy\nrunpy.run_module(%r, run_name=\"__main__\", alter_sys=True)\n" % module
    ).encode()
    write_zipapp(args.out, entries)
    print(args.out)


if __name__ == "__main__":
    sys.exit(main())
