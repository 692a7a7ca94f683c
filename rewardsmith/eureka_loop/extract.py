"""Find the reward function's code in an LLM reply.

Models wrap code in Markdown fences (labelled or not), add prose around it, send several blocks
(an example, then the answer), or send bare code. The critic needs exactly the candidate's source,
and when there is none the designer needs to be told precisely why, so the error says what was
wrong with the reply.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from rewardsmith.reward.syntax import parse

ENTRY_POINT = "compute_reward"

_FENCE_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")
_DEFINES_ENTRY = re.compile(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{ENTRY_POINT}[ \t]*\(", re.MULTILINE)
_THINK = re.compile(r"<think(?:ing)?>.*?(?:</think(?:ing)?>|\Z)", re.DOTALL | re.IGNORECASE)
_PYTHON_LANGS = {"", "python", "python3", "py", "py3", "python-repl", "ipython"}
# Lines that can start top-level Python code (used only when the reply has no fences).
_CODE_LINE = re.compile(
    r"^(?:(?:async[ \t]+)?def[ \t]|class[ \t]|import[ \t]|from[ \t]+[\w.]+[ \t]+import[ \t]|@|#"
    r"|[A-Za-z_][\w.]*(?:[ \t]*:[^=\n]+)?[ \t]*[-+*/%&|^]?=[^=]|[)\]}]|return\b|if[ \t].*:$"
    r"|elif[ \t]|else:|try:|except\b|finally:|with[ \t]|for[ \t].*:$|while[ \t].*:$|\"\"\"|''')"
)


class ExtractError(ValueError):
    """The reply holds no usable code; the message says what was wrong, for the designer."""


@dataclass(frozen=True)
class _Block:
    lang: str
    code: str


def extract_code(reply: str) -> str:
    """The reward function's source from an LLM reply, dedented, ending in one newline.

    Preference: a fenced block that defines ``compute_reward`` (the last one when several do);
    else the only fenced block (or the only Python-labelled one); else, when there are no
    fences, the bare code around ``def compute_reward``.
    """
    if not reply or not reply.strip():
        raise ExtractError("the reply is empty")
    # Reasoning models may draft code inside <think>; only the answer after it counts, unless
    # the reply has nothing else.
    answer = _THINK.sub("", reply)
    if answer.strip():
        try:
            return _extract(answer)
        except ExtractError:
            if answer == reply:
                raise
    return _extract(reply)


def _extract(text: str) -> str:
    blocks = [b for b in _fenced_blocks(text) if b.code.strip()]
    if blocks:
        defining = [b for b in blocks if _DEFINES_ENTRY.search(b.code)]
        if defining:
            return _finish(defining[-1].code)
        if len(blocks) == 1:
            return _finish(blocks[0].code)
        python = [b for b in blocks if b.lang in _PYTHON_LANGS]
        if len(python) == 1:
            return _finish(python[0].code)
        raise ExtractError(
            f"the reply contains {len(blocks)} code blocks but none defines "
            f"`def {ENTRY_POINT}(...)`; send one Python block with the function"
        )
    if _DEFINES_ENTRY.search(text):
        return _finish(_bare_code(text))
    if "```" in text or "~~~" in text:
        raise ExtractError("the reply's code block is empty")
    raise ExtractError(
        f"the reply contains no code block and no `def {ENTRY_POINT}(...)`; "
        "send the function in a ```python block"
    )


def _fenced_blocks(text: str) -> list[_Block]:
    """Markdown fenced blocks in order; an unclosed last fence (a cut-off reply) runs to the end."""
    blocks: list[_Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opened = _FENCE_OPEN.match(lines[i])
        if opened is None:
            i += 1
            continue
        fence = opened.group("fence")
        lang = (opened.group("info").split() or [""])[0].lower().lstrip(".{").rstrip("}")
        body: list[str] = []
        i += 1
        while i < len(lines):
            stripped = lines[i].strip()
            if len(stripped) >= len(fence) and stripped == fence[0] * len(stripped):
                i += 1
                break
            body.append(lines[i])
            i += 1
        blocks.append(_Block(lang=lang, code="\n".join(body)))
    return blocks


def _bare_code(text: str) -> str:
    """Code around ``def compute_reward`` in an unfenced reply, with the prose cut off."""
    lines = text.splitlines()
    match = _DEFINES_ENTRY.search(text)
    assert match is not None
    def_line = text.count("\n", 0, match.start())
    # Indented replies (e.g. the code sits in a list item) are judged after dedenting.
    indent = len(lines[def_line]) - len(lines[def_line].lstrip())
    shifted = [line[indent:] if line[:indent].strip() == "" else line for line in lines]

    start = def_line
    while start > 0 and _is_code(shifted[start - 1], allow_blank=True):
        start -= 1
    while start < def_line and not shifted[start].strip():
        start += 1
    end = def_line + 1
    while end < len(shifted) and _is_code(shifted[end], allow_blank=True):
        end += 1
    while end > def_line + 1 and not shifted[end - 1].strip():
        end -= 1
    # The heuristic may keep a prose line that happens to look like code; trim from the end
    # until the code parses (the critic reports real syntax errors anyway).
    for stop in range(end, def_line, -1):
        candidate = "\n".join(shifted[start:stop])
        if _parses(candidate):
            return candidate
    return "\n".join(shifted[start:end])


def _is_code(line: str, *, allow_blank: bool) -> bool:
    if not line.strip():
        return allow_blank
    if line[0] in " \t":  # indented: inside a function, a call or a literal
        return True
    return _CODE_LINE.match(line) is not None


def _parses(code: str) -> bool:
    try:
        parse(code)
    except (SyntaxError, ValueError):
        return False
    return True


def _finish(code: str) -> str:
    return textwrap.dedent(code).strip("\n").rstrip() + "\n"
