"""Levels are a ladder: sanity < acceptance < stress. A level's run covers that level and
every level below it (`-m stress` runs the sanity, acceptance and stress cases).

How `-m` reads a level's name (pure functions; run/level_select.py applies them):

- named (`-m acceptance`, `-m "sanity and not slow"`): that level and every level below;
- under `not` (`-m "not stress"`, `-m "acceptance and not sanity"`): that level's own
  cases only, so `not stress` is the default suite and `not sanity` the checks under load.

Each case carries the marker of its level and of every level above it (`ladder_markers`),
so a level's name alone selects the ladder; a name under `not` is read as "this level and
not the one below" (`ladder_expression`), which pytest's own -m evaluates.
"""

from __future__ import annotations

import re

from pytest_cluster.contract.declaration import LEVELS

#: pytest's -m tokens: a string literal (a marker's keyword value), a parenthesis, a
#: comma or '=', an identifier (pytest's own characters), blank space.
_TOKEN = re.compile(r"""\s+|"[^"]*"|'[^']*'|[(),=]|(?:\w|:|\+|-|\.|\[|\]|\\|/)+""")
_KEYWORDS = ("and", "or", "not")


def ladder_markers(level: str) -> tuple[str, ...]:
    """The level markers a case of `level` carries: its own and every level above it
    (a sanity case is part of the acceptance and the stress runs)."""
    return LEVELS[LEVELS.index(level):] if level in LEVELS else ()


def covered(level: str) -> tuple[str, ...]:
    """The levels a run at `level` covers: it and every level below it; () for what is
    no level (an -m expression)."""
    return LEVELS[:LEVELS.index(level) + 1] if level in LEVELS else ()


def plain_level(expression: str) -> str | None:
    """The level an -m expression is, when it is one level's name alone ('stress'),
    else None."""
    name = expression.strip()
    return name if name in LEVELS else None


def _tokens(expression: str) -> list[re.Match[str]] | None:
    found, at = [], 0
    while at < len(expression):
        match = _TOKEN.match(expression, at)
        if match is None:
            return None  # pytest says what is wrong with it
        if not match.group().isspace():
            found.append(match)
        at = match.end()
    return found


class _Rewrite:
    """Recursive descent over pytest's -m grammar, writing it back with each level's name
    under an odd number of `not`s read as that level's own cases."""

    def __init__(self, expression: str, tokens: list[re.Match[str]]) -> None:
        self.expression, self.tokens, self.at = expression, tokens, 0

    def peek(self) -> str | None:
        return self.tokens[self.at].group() if self.at < len(self.tokens) else None

    def take(self) -> str:
        word = self.peek()
        if word is None:
            raise SyntaxError("end of input")
        self.at += 1
        return word

    def expr(self, negated: bool) -> str:
        parts = [self.and_expr(negated)]
        while self.peek() == "or":
            self.take()
            parts.append(self.and_expr(negated))
        return " or ".join(parts)

    def and_expr(self, negated: bool) -> str:
        parts = [self.not_expr(negated)]
        while self.peek() == "and":
            self.take()
            parts.append(self.not_expr(negated))
        return " and ".join(parts)

    def not_expr(self, negated: bool) -> str:
        word = self.take()
        if word == "not":
            return f"not {self.not_expr(not negated)}"
        if word == "(":
            inner = self.expr(negated)
            if self.take() != ")":
                raise SyntaxError("expected )")
            return f"({inner})"
        if word in _KEYWORDS or word in (")", ",", "="):
            raise SyntaxError(word)
        if self.peek() == "(":  # a marker's keyword arguments: written back as given
            start = self.tokens[self.at].start()
            while self.take() != ")":
                pass
            return word + self.expression[start:self.tokens[self.at - 1].end()]
        if negated and word in LEVELS and word != LEVELS[0]:
            below = LEVELS[LEVELS.index(word) - 1]
            return f"({word} and not {below})"  # the level's own cases
        return word


def ladder_expression(expression: str) -> str:
    """The -m expression pytest evaluates over the ladder markers: each level's name under
    `not` becomes its own cases ('not stress' -> 'not (stress and not acceptance)'). An
    expression that does not parse is returned as given (pytest says what is wrong)."""
    tokens = _tokens(expression)
    if not tokens:
        return expression
    rewrite = _Rewrite(expression, tokens)
    try:
        written = rewrite.expr(negated=False)
    except SyntaxError:
        return expression
    return written if rewrite.peek() is None else expression
