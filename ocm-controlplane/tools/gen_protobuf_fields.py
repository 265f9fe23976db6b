#!/usr/bin/env python3
"""Writes ocm-controlplane/src/http/protobuf/fields.json: for every message a protobuf request body of a
built-in kind can hold, its field numbers with the JSON name, value type and Go marshalling flags that
turn a decoded message into the JSON kube-apiserver's Go types would marshal.

Two machine-readable inputs, both of Kubernetes 1.35.0:

1. The `k8s-pb` crate, version 0.9.0 (prost structs generated from Kubernetes 1.35.0's protobuf
   definitions): field numbers, wire kinds (`string`, `int32`, `bytes`, `message`, maps, repeated)
   and the message type of every message field. Obtain it with cargo, e.g. by adding it as a
   (dev-)dependency and building once: it is then under `~/.cargo/registry/src/*/k8s-pb-0.9.0`.
2. The Go type definitions of the Kubernetes repositories `kubernetes/api`, `kubernetes/apimachinery`
   and `kubernetes/apiextensions-apiserver` at tag `v0.35.0` (any checkout or source archive): the JSON
   name of every field (`json:"..."` tag), `omitempty`, whether the Go field is a pointer (a pointer
   keeps an explicit zero value), and which embedded structs are inlined into their parent's JSON.
   The field numbers of their `protobuf:"..."` tags are cross-checked against k8s-pb.

The roots are the kinds listed in `src/registry/builtin_schemas.json` (its `roots`), the stored
admissionregistration kinds and `DeleteOptions`; JSON names are cross-checked against that file's properties.

    python3 ocm-controlplane/tools/gen_protobuf_fields.py K8S_PB_DIR API_DIR APIMACHINERY_DIR \\
        APIEXTENSIONS_APISERVER_DIR

Output format: `{"source", "kinds": {"<apiVersion>/<kind>": message}, "messages": {name: {"fields":
[[number, jsonName, type, flags], ...], "as": special}}}`. `type` is `string`, `bool`, `int32`, `int64`,
`double`, `bytes` or a message name; flags: `r` repeated, `m` map with string keys (`type` is the value
type), `p` Go pointer, `o` omitempty, `i` embedded struct inlined into the parent (empty JSON name).
`as` names the messages whose JSON form is not their fields (Go types with their own MarshalJSON, and
named Go slices that protobuf wraps in a message): `time`, `microtime`, `quantity`, `intorstring`,
`json` (raw JSON bytes in field 1), `schema-or-array`, `schema-or-bool`, `schema-or-strings`, `list`
(the repeated field 1 as a JSON array). Fields of `as` messages carry the protobuf names.

The one warning expected today: PodSpec's alpha field `workloadRef` of 1.35 is not in the 1.36 OpenAPI
schemas (it was replaced in 1.36); it is decoded like any other field.
"""
import json
import re
import sys
from pathlib import Path

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
APIEXT = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1"

# Go types whose JSON is written by their own MarshalJSON (see the module docs for what each means).
SPECIAL = {
    f"{META}.Time": "time",
    f"{META}.MicroTime": "microtime",
    f"{META}.FieldsV1": "json",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "intorstring",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "json",
    f"{APIEXT}.JSON": "json",
    f"{APIEXT}.JSONSchemaPropsOrArray": "schema-or-array",
    f"{APIEXT}.JSONSchemaPropsOrBool": "schema-or-bool",
    f"{APIEXT}.JSONSchemaPropsOrStringArray": "schema-or-strings",
}

# Go types with their own MarshalJSON that no root reaches today; reaching one needs a new `as`.
UNSUPPORTED = {f"{META}.Duration"}

# Messages decoded outside the kinds table (DELETE bodies).
EXTRA_ROOTS = [f"{META}.DeleteOptions"]

# Stored kinds that builtin_schemas.json does not list (apiVersion/kind -> definition).
ADMISSION = "io.k8s.api.admissionregistration.v1"
EXTRA_KINDS = {
    f"admissionregistration.k8s.io/v1/{kind}": f"{ADMISSION}.{kind}"
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ]
}

# k8s-pb module path prefix -> (Go repository argument index, directory inside it, definition prefix)
PACKAGES = [
    (("api",), 0, "", "io.k8s.api"),
    (("apimachinery", "pkg"), 1, "pkg", "io.k8s.apimachinery.pkg"),
    (("apiextensions_apiserver", "pkg"), 2, "pkg", "io.k8s.apiextensions-apiserver.pkg"),
]

SCALARS = {"string", "bool", "int32", "int64", "double"}


def pb_package(module):
    """k8s-pb module path (tuple) -> definition-name prefix, or None."""
    for prefix, _, _, name in PACKAGES:
        if module[: len(prefix)] == prefix:
            return ".".join([name, *module[len(prefix):]])
    return None


def parse_k8s_pb(root):
    """{package: {lowercase message name: [field dicts]}} from prost structs."""
    out = {}
    for path in sorted(Path(root, "src").rglob("mod.rs")):
        module = path.relative_to(Path(root, "src")).parent.parts
        package = pb_package(module)
        if package is None:
            continue
        lines = path.read_text().splitlines()
        messages = {}
        current = None
        attr = None
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            m = re.match(r"pub struct (\w+) \{\}$", line)
            if m:
                messages[m.group(1).lower()] = []
                i += 1
                continue
            m = re.match(r"pub struct (\w+) \{$", line)
            if m:
                current = []
                messages[m.group(1).lower()] = current
            elif line == "}":
                current = None
            elif current is not None and line.startswith("#[prost("):
                attr = line
            elif current is not None and attr and line.startswith("pub "):
                decl = line
                while not (decl.endswith(",") and decl.count("<") == decl.count(">")):
                    i += 1
                    decl = decl + " " + lines[i].strip()
                current.append(parse_pb_field(attr, decl, module))
                attr = None
            i += 1
        out.setdefault(package, {}).update(messages)
    return out


def resolve_rust_type(path, module):
    """`super::super::core::v1::PodSpec` relative to `module` -> (package, lowercase name)."""
    parts = path.split("::")
    mod = list(module)
    while parts and parts[0] == "super":
        mod.pop()
        parts.pop(0)
    mod.extend(parts[:-1])
    return pb_package(tuple(mod)), parts[-1].lower()


def parse_pb_field(attr, decl, module):
    tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
    name = re.match(r"pub (?:r#)?(\w+):", decl).group(1)
    body = attr[len("#[prost("):]
    field = {"tag": tag, "pb_name": name, "repeated": ", repeated," in attr, "map": False}
    m = re.match(r'btree_map = "string, (\w+)"', body)
    if m:
        field["map"] = True
        kind = m.group(1)
        if kind == "message":
            m = re.search(r"BTreeMap<\s*::prost::alloc::string::String,\s*([\w:]+),?\s*>", decl)
            if m is None:
                raise SystemExit(f"unparsed map field {decl!r}")
            value = m.group(1)
            field["type"] = ("message", resolve_rust_type(value, module))
        else:
            field["type"] = kind
        return field
    kind = re.match(r"(\w+)", body).group(1)
    if kind == "message":
        m = re.search(r"(?:Option|Vec|Box)<\s*([\w:]+),?\s*>+,$", decl)
        if m is None:
            raise SystemExit(f"unparsed message field {decl!r}")
        inner = m.group(1)
        field["type"] = ("message", resolve_rust_type(inner, module))
    elif kind in SCALARS or kind == "bytes":
        field["type"] = kind
    else:
        raise SystemExit(f"unexpected prost kind {kind} in {decl}")
    return field


def parse_go(directory):
    """{struct name: {protobuf number: go field}} and {named non-struct type: underlying}."""
    structs, named = {}, {}
    for path in sorted(Path(directory).glob("*.go")):
        if path.name.endswith("_test.go") or path.name.startswith("zz_generated") or path.name.endswith(".pb.go"):
            continue
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            empty = re.match(r"type (\w+) struct ?\{\}", line)
            if empty:
                structs[empty.group(1)] = {}
                i += 1
                continue
            m = re.match(r"type (\w+) struct \{\s*$", line)
            if m:
                fields = {}
                order = 0
                i += 1
                while i < len(lines) and lines[i] != "}":
                    f = parse_go_field(lines[i])
                    if f is not None:
                        f["order"] = order
                        order += 1
                        fields[f["number"]] = f
                    i += 1
                structs[m.group(1)] = fields
            else:
                m = re.match(r"type (\w+) (\S.*?)\s*(//.*)?$", line)
                if m and not m.group(2).startswith(("struct", "interface", "func", "=")):
                    named[m.group(1)] = m.group(2)
            i += 1
    return structs, named


def parse_go_field(line):
    stripped = line.strip()
    if stripped.startswith("//") or "`" not in stripped:
        return None
    before, tag = stripped.split("`", 2)[:2]
    tags = dict(re.findall(r'(\w+):"([^"]*)"', tag))
    if "protobuf" not in tags or tags["protobuf"] == "-":
        return None
    words = before.split()
    embedded = len(words) == 1
    go_type = words[-1]
    json_parts = tags.get("json", "").split(",")
    json_name = json_parts[0]
    return {
        "number": int(tags["protobuf"].split(",")[1]),
        "json": json_name,
        "omitempty": "omitempty" in json_parts[1:],
        "pointer": go_type.startswith("*"),
        "inline": embedded and json_name == "",
        "go_type": go_type,
    }


def main():
    if len(sys.argv) != 5:
        raise SystemExit(__doc__)
    pb = parse_k8s_pb(sys.argv[1])
    go_roots = [Path(p) for p in sys.argv[2:5]]
    here = Path(__file__).resolve().parent.parent
    schemas = json.loads((here / "src/registry/builtin_schemas.json").read_text())

    go_cache = {}

    def go_package(package):
        if package not in go_cache:
            for _, index, sub, name in PACKAGES:
                if package.startswith(name + "."):
                    rest = package[len(name) + 1:].split(".")
                    go_cache[package] = parse_go(go_roots[index].joinpath(sub, *rest))
                    break
            else:
                raise SystemExit(f"no Go package for {package}")
        return go_cache[package]

    def go_name(package, lower):
        structs, named = go_package(package)
        for name in list(structs) + list(named):
            if name.lower() == lower:
                return name
        raise SystemExit(f"no Go type for {package}.{lower}")

    messages = {}
    pending = [(d.rsplit(".", 1)[0], d.rsplit(".", 1)[1].lower())
               for d in list(schemas["roots"].values()) + EXTRA_ROOTS + list(EXTRA_KINDS.values())]
    problems = []
    while pending:
        package, lower = pending.pop()
        pb_fields = pb[package][lower]
        name = go_name(package, lower)
        full = f"{package}.{name}"
        if full in messages:
            continue
        if full in UNSUPPORTED:
            raise SystemExit(f"{full} is reachable: give it an `as` form here and in the decoder")
        structs, named = go_package(package)
        go_fields = structs.get(name)
        entry = {}
        if full in SPECIAL:
            entry["as"] = SPECIAL[full]
        elif go_fields is None:
            underlying = named.get(name, "")
            if not underlying.startswith("[]"):
                raise SystemExit(f"{full}: a message without a Go struct ({underlying!r})")
            entry["as"] = "list"
        rows = []
        for f in pb_fields:
            kind = f["type"]
            if isinstance(kind, tuple):
                ref_package, ref_lower = kind[1]
                type_name = f"{ref_package}.{go_name(ref_package, ref_lower)}"
                pending.append((ref_package, ref_lower))
            else:
                type_name = kind
            flags = ("r" if f["repeated"] else "") + ("m" if f["map"] else "")
            if go_fields is not None and "as" not in entry:
                g = go_fields.get(f["tag"])
                if g is None:
                    problems.append(f"{full}: field {f['tag']} ({f['pb_name']}) has no Go field")
                    continue
                flags += ("p" if g["pointer"] else "") + ("o" if g["omitempty"] else "") + ("i" if g["inline"] else "")
                json_name = g["json"]
                order = g["order"]
            else:
                json_name = f["pb_name"]
                order = f["tag"]
            rows.append((order, [f["tag"], json_name, type_name, flags]))
        if go_fields is not None and "as" not in entry:
            for number, g in go_fields.items():
                if not any(r[1][0] == number for r in rows):
                    problems.append(f"{full}: Go field {g['json']} ({number}) is not in k8s-pb")
        entry["fields"] = [r for _, r in sorted(rows, key=lambda r: r[0])]
        messages[full] = entry

    # JSON names against the OpenAPI properties of the same definitions.
    definitions = schemas["definitions"]
    for full, entry in messages.items():
        props = definitions.get(full, {}).get("properties")
        if props is None or "as" in entry:
            continue
        for number, json_name, _, flags in entry["fields"]:
            if "i" not in flags and json_name not in props:
                problems.append(f"{full}: {json_name} is not an OpenAPI property")

    kinds = {}
    for key, definition in schemas["roots"].items():
        group = key.split("/", 1)[0]
        package, kind = definition.rsplit(".", 1)
        version = package.rsplit(".", 1)[1]
        kinds[f"{group}/{version}/{kind}" if group else f"{version}/{kind}"] = definition
    kinds.update(EXTRA_KINDS)

    for p in problems:
        print("warning:", p, file=sys.stderr)
    out = {
        "source": "k8s-pb 0.9.0 and Go types v0.35.0 (Kubernetes 1.35.0); tools/gen_protobuf_fields.py",
        "kinds": dict(sorted(kinds.items())),
    }
    dest = here / "src/http/protobuf/fields.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w") as f:
        head = json.dumps(out, separators=(",", ":"))[:-1]
        f.write(head + ',"messages":{\n')
        names = sorted(messages)
        for i, name in enumerate(names):
            sep = "," if i + 1 < len(names) else ""
            f.write(json.dumps(name) + ":" + json.dumps(messages[name], separators=(",", ":")) + sep + "\n")
        f.write("}}\n")
    print(f"{dest}: {len(messages)} messages, {dest.stat().st_size} bytes, {len(problems)} warnings")


if __name__ == "__main__":
    main()
