#!/usr/bin/env python3
"""json_schema_check.py SCHEMA DOCUMENT - validate DOCUMENT against the subset of JSON Schema
(2020-12) that docs/*.schema.json use: type, required, properties, additionalProperties
(false), items, enum, pattern, minimum, $ref to #/$defs/... Exit 0 when valid; else print
each problem with its JSON path and exit 1. (The jsonschema module may not be installed.)"""
import json
import re
import sys

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool)
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "null": lambda v: v is None,
}


def check(schema, value, path, root, problems):
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/"), ref
        target = root
        for part in ref[2:].split("/"):
            target = target[part]
        check(target, value, path, root, problems)
        return
    t = schema.get("type")
    if t and not TYPES[t](value):
        problems.append(f"{path}: want {t}, got {json.dumps(value)[:60]}")
        return
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} not in {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        problems.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if "minimum" in schema and isinstance(value, (int, float)) and value < schema["minimum"]:
        problems.append(f"{path}: {value} < {schema['minimum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{path}: missing '{key}'")
        props = schema.get("properties", {})
        for key, v in value.items():
            if key in props:
                check(props[key], v, f"{path}.{key}", root, problems)
            elif schema.get("additionalProperties") is False:
                problems.append(f"{path}: unexpected '{key}'")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            check(schema["items"], v, f"{path}[{i}]", root, problems)


def main():
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    with open(sys.argv[2]) as f:
        doc = json.load(f)
    problems = []
    check(schema, doc, "$", schema, problems)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
