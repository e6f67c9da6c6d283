"""Parsing Python source safely from any thread.

CPython 3.11's AST constructor keeps its recursion depth in interpreter state that threads
share, so two parses at once can fail with a spurious "AST constructor recursion depth mismatch"
SystemError (python/cpython#106905). Validation runs in thread pools (best-of-N, corpus and
image passes, RL rewards), so every parse in this process goes through one lock; a parse of a
program takes well under a millisecond.
"""

from __future__ import annotations

import ast
import threading
import warnings
from types import CodeType

_PARSING = threading.Lock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse`, one thread at a time (SyntaxError as ast.parse raises it)."""
    with _PARSING, warnings.catch_warnings():
        # A program's own warnings (an invalid escape in a regex string) are not the host's.
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source, filename=filename)


def compile_tree(tree: ast.Module, filename: str) -> CodeType:
    """`compile` of a parsed (and perhaps edited) module, under the same lock: turning a Python
    AST back into the interpreter's shares the same state."""
    with _PARSING:
        return compile(tree, filename, "exec")
