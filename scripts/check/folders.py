#!/usr/bin/env python3
"""Folders of a module that depend on each other in a loop (docs/architecture.md).

A folder depends on another when one of its files names a type or a free function declared in the other, or calls a
method declared there (`x.name(…)`; most methods live in extensions, so `Ledger.history`, declared in Reads/, called
from Append/ is Append -> Reads). A method is told apart by its name alone: a name declared as a method in two folders,
or anywhere outside the module (the other modules of Sources/, the packages in .build/checkouts, the standard
library's common names), could mean another, and is left out. Naming a type in `extension T` is not a dependency: the
extension adds to T. Prints each dependency and exits 1 when two folders (or more, around a cycle) depend on each
other. The packages' sources must be there (`swift package resolve`): without them a call of a package's method would
be taken for this module's, and a loop reported that is not one (exits 2).

    scripts/check/folders.py Sources/LedgerPostgres
"""
import re
import sys
from pathlib import Path

# Top-level declarations only (no indentation): a nested type is named through its parent.
DECLARATION = re.compile(
    r'^(?:@\w+\s+)*(?:(?:public|private|fileprivate|internal|package|final|static|indirect)\s+)*'
    r'(?:struct|enum|class|protocol|actor|typealias|func)\s+([A-Za-z_]\w*)', re.M)
COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)
STRING = re.compile(r'"""(?:.|\n)*?"""|"(?:\\.|[^"\\\n])*"')
# A method: a `func` declared inside a type or an extension (indented); a private one is its file's own.
METHOD = re.compile(r'^[ \t]+(?:@\w+\s+)*((?:\w+\s+)*)func\s+([A-Za-z_]\w*)', re.M)
ANY_FUNC = re.compile(r'\bfunc\s+([A-Za-z_]\w*)')
EXTENSION = re.compile(r'^(\s*)extension\s+[A-Za-z_][\w.]*', re.M)
# Methods of the standard library and Foundation a member call here may mean (their sources are not in the tree).
STANDARD = {'append', 'contains', 'count', 'filter', 'first', 'forEach', 'hash', 'index', 'insert', 'isEmpty', 'joined',
            'last', 'map', 'max', 'min', 'next', 'reduce', 'remove', 'sorted', 'split', 'take', 'time', 'prefix',
            'suffix', 'starts', 'lowercased', 'uppercased', 'compactMap', 'flatMap', 'description', 'run', 'read',
            'write', 'close', 'start', 'stop', 'cancel', 'wait', 'get', 'set', 'add', 'reset', 'value', 'yield'}


def folder_of(root: Path, file: Path) -> str:
    parts = file.relative_to(root).parts
    return parts[0] if len(parts) > 1 else '.'


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else 'Sources/LedgerPostgres')
    if not Path('.build/checkouts').is_dir():
        print('.build/checkouts is missing: run `swift package resolve` first', file=sys.stderr)
        return 2
    files = sorted(root.rglob('*.swift'))
    declared: dict[str, str] = {}
    texts = {}
    for file in files:
        text = STRING.sub('""', COMMENT.sub('', file.read_text()))
        texts[file] = text
        for match in DECLARATION.finditer(text):
            # A private declaration is its file's own: it cannot be named from another folder.
            if not re.match(r'(?:@\w+\s+)*(?:private|fileprivate)\b', match.group(0)):
                declared.setdefault(match.group(1), folder_of(root, file))
    methods: dict[str, set[str]] = {}
    for file, text in texts.items():
        for match in METHOD.finditer(text):
            if not re.search(r'\b(?:private|fileprivate)\b', match.group(1)):
                methods.setdefault(match.group(2), set()).add(folder_of(root, file))
    # What else a call here can mean: the methods of the modules this one imports (its siblings in the tree, and the
    # packages), and of the standard library.
    imported = {name for text in texts.values() for name in re.findall(r'^(?:@\w+\s+)?import\s+(\w+)', text, re.M)}
    elsewhere = set(STANDARD)
    for other in [root.parent / name for name in imported if (root.parent / name).is_dir()] + [Path('.build/checkouts')]:
        for file in other.rglob('*.swift'):
            elsewhere.update(ANY_FUNC.findall(file.read_text(errors='ignore')))
    # A folder's own declarations, private ones included: a call there means its own first.
    own: dict[str, set[str]] = {}
    for file, text in texts.items():
        own.setdefault(folder_of(root, file), set()).update(ANY_FUNC.findall(text))
    called = {name: next(iter(folders)) for name, folders in methods.items()
              if len(folders) == 1 and name not in elsewhere and name not in declared}
    edges: dict[tuple[str, str], set[str]] = {}
    for file, text in texts.items():
        here = folder_of(root, file)
        code = EXTENSION.sub(r'\1extension', text)
        for word in set(re.findall(r'\b[A-Za-z_]\w*\b', code)):
            there = declared.get(word)
            if there and there != here:
                edges.setdefault((here, there), set()).add(word)
        # Member calls, and calls on an implicit self (inside the extensions that declare most methods).
        for word in set(re.findall(r'(?:\.|(?<![\w.])(?<!func ))([A-Za-z_]\w*)\s*\(', code)):
            there = called.get(word)
            if there and there != here and word not in own.get(here, set()):
                edges.setdefault((here, there), set()).add(word + '()')
    graph: dict[str, set[str]] = {}
    for (a, b) in edges:
        graph.setdefault(a, set()).add(b)
    for (a, b), names in sorted(edges.items()):
        print(f'{a} -> {b}: {", ".join(sorted(names))}')
    loops = []
    for (a, b) in edges:
        # b reaches a again?
        seen, stack = set(), [b]
        while stack:
            node = stack.pop()
            if node == a:
                loops.append((a, b))
                break
            if node in seen:
                continue
            seen.add(node)
            stack.extend(graph.get(node, ()))
    if loops:
        print('\nfolders in a loop:')
        for a, b in sorted(loops):
            print(f'  {a} -> {b} -> … -> {a}')
        return 1
    print('\nno folder depends on one that depends on it')
    return 0


if __name__ == '__main__':
    sys.exit(main())
