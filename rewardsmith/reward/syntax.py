"""Thread-safe parsing and compiling of Python source.

CPython 3.11 keeps the AST converter's recursion counter in interpreter-wide state, so two
threads converting syntax trees at once (the critic checks candidates in parallel threads) can
corrupt each other's count when a garbage collection in one lets the other run: `ast.parse` then
raises `SystemError: AST constructor recursion depth mismatch`. Every conversion between source,
syntax tree and code object goes through this one lock.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

_AST_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`, serialised across threads."""
    with _AST_LOCK:
        return ast.parse(source, filename=filename)


def compile_module(tree: ast.Module, filename: str) -> CodeType:
    """`compile(tree, filename, "exec")`, serialised across threads."""
    with _AST_LOCK:
        return compile(tree, filename, "exec")
