"""Static checks on reward source: run before any sandbox starts, and never execute the code."""

from __future__ import annotations

import ast

from rewardsmith.job_spec import REWARD_FILE
from rewardsmith.reward.errors import ErrorCategory, RewardError
from rewardsmith.reward.syntax import parse

ALLOWED_IMPORTS = frozenset({"numpy", "math", "typing", "__future__"})
CONTRACT_PARAMETERS = ("state", "action", "next_state")
FORBIDDEN_NAMES = frozenset({"open", "exec", "eval", "compile", "__import__", "globals", "input"})
# Attributes that reach other modules or the file system through allowed ones (`typing.sys`,
# `np.load`, ...). The sandbox is the security boundary; this only gives early, clear errors.
FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "sys",
        "os",
        "modules",
        "builtins",
        "importlib",
        "subprocess",
        "ctypes",
        "ctypeslib",
        "load",
        "save",
        "savez",
        "savez_compressed",
        "savetxt",
        "loadtxt",
        "genfromtxt",
        "fromfile",
        "tofile",
        "memmap",
        "DataSource",
        "lib",
    }
)


def check_source(source: str, filename: str = REWARD_FILE) -> ast.Module:
    """Parse the source and check the contract's shape; raise RewardError on the first problem."""
    try:
        tree = parse(source, filename)
    except SyntaxError as exc:
        raise RewardError(
            ErrorCategory.SYNTAX_ERROR,
            f"{exc.msg}: {(exc.text or '').strip()}",
            line=exc.lineno,
            column=exc.offset,
        ) from None
    _check_imports(tree)
    _check_forbidden_calls(tree)
    _check_signature(tree)
    return tree


def _check_imports(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else ["." * node.level]
        for name in names:
            if name.split(".")[0] not in ALLOWED_IMPORTS:
                allowed = ", ".join(sorted(ALLOWED_IMPORTS - {"__future__"}))
                raise RewardError(
                    ErrorCategory.FORBIDDEN_IMPORT,
                    f"import of {name!r} is not allowed; reward code may import only {allowed}",
                    line=getattr(node, "lineno", None),
                )


def _check_forbidden_calls(tree: ast.Module) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            raise RewardError(
                ErrorCategory.FORBIDDEN_IMPORT,
                f"{node.id!r} is not allowed in reward code (no I/O or dynamic code)",
                line=node.lineno,
            )
        if isinstance(node, ast.Attribute) and node.attr in FORBIDDEN_ATTRIBUTES:
            raise RewardError(
                ErrorCategory.FORBIDDEN_IMPORT,
                f"attribute {node.attr!r} is not allowed in reward code (no I/O or access to other modules)",
                line=node.lineno,
            )
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("__")
            and node.attr != "__init__"
        ):
            raise RewardError(
                ErrorCategory.FORBIDDEN_IMPORT,
                f"dunder attribute {node.attr!r} is not allowed in reward code",
                line=node.lineno,
            )


def _check_signature(tree: ast.Module) -> None:
    defs = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name == "compute_reward"
    ]
    if not defs:
        raise RewardError(
            ErrorCategory.SIGNATURE_ERROR,
            "no top-level function `compute_reward(state, action, next_state)` was defined",
        )
    if len(defs) > 1:
        raise RewardError(
            ErrorCategory.SIGNATURE_ERROR,
            f"`compute_reward` is defined {len(defs)} times; define it exactly once",
            line=defs[1].lineno,
        )
    func = defs[0]
    if isinstance(func, ast.AsyncFunctionDef):
        raise RewardError(
            ErrorCategory.SIGNATURE_ERROR, "compute_reward must not be async", line=func.lineno
        )
    args = func.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    extras = args.vararg or args.kwarg or args.kwonlyargs
    if tuple(positional) != CONTRACT_PARAMETERS or extras:
        got = ", ".join(positional + ([f"*{args.vararg.arg}"] if args.vararg else []))
        raise RewardError(
            ErrorCategory.SIGNATURE_ERROR,
            f"compute_reward takes ({got}); the contract is "
            f"compute_reward({', '.join(CONTRACT_PARAMETERS)})",
            line=func.lineno,
        )


def fields_read(source: str) -> set[str]:
    """State fields the code reads as `state.x`, `next_state.x` or `state["x"]` (no execution)."""
    names: set[str] = set()
    for node in ast.walk(parse(source)):
        target = getattr(node, "value", None)
        if not (isinstance(target, ast.Name) and target.id in ("state", "next_state")):
            continue
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            names.add(str(node.slice.value))
    return names
