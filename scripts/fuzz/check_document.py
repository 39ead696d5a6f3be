"""Checks that the OpenAPI document the service serves is valid YAML (PyYAML, as schemathesis loads it).

Usage: check_document.py SERVED.yaml FUZZ.yaml
Exit 0: valid, copied unchanged. Exit 1: invalid; the error is printed, and FUZZ.yaml is a copy in which plain
`description:`/`summary:` scalars holding ": " are quoted, so that the fuzz run can still go on. The run fails
either way: the served document must be fixed in Sources/LedgerHTTP/openapi.yaml.
"""
import json
import re
import sys

import yaml

served, target = sys.argv[1], sys.argv[2]
text = open(served, encoding="utf-8").read()
try:
    yaml.safe_load(text)
    open(target, "w", encoding="utf-8").write(text)
    sys.exit(0)
except yaml.YAMLError as error:
    print(f"INVALID DOCUMENT: /openapi.yaml is not valid YAML: {error}".replace("\n", " "), file=sys.stderr)

pattern = re.compile(r"^(\s*(?:- )?(?:description|summary): )([^'\"|>{\[].*: .*)$")
lines, quoted = [], []
for number, line in enumerate(text.split("\n"), 1):
    match = pattern.match(line)
    if match:
        quoted.append(number)
        line = match.group(1) + json.dumps(match.group(2))
    lines.append(line)
repaired = "\n".join(lines)
yaml.safe_load(repaired)  # raises if the repair was not enough
open(target, "w", encoding="utf-8").write(repaired)
print(f"fuzzing a repaired copy: quoted the plain scalars on lines {quoted}", file=sys.stderr)
sys.exit(1)
