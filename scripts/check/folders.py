#!/usr/bin/env python3
"""Folders of a module that depend on each other in a loop (docs/architecture.md).

A folder depends on another when one of its files names a type or a free function declared in the other. Prints
each dependency and exits 1 when two folders (or more, around a cycle) depend on each other.

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


def folder_of(root: Path, file: Path) -> str:
    parts = file.relative_to(root).parts
    return parts[0] if len(parts) > 1 else '.'


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else 'Sources/LedgerPostgres')
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
    edges: dict[tuple[str, str], set[str]] = {}
    for file, text in texts.items():
        here = folder_of(root, file)
        for word in set(re.findall(r'\b[A-Za-z_]\w*\b', text)):
            there = declared.get(word)
            if there and there != here:
                edges.setdefault((here, there), set()).add(word)
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
