"""The HTML report's templates (report/templates/*.j2), rendered as pytest-html renders its
own: Jinja, every value escaped (autoescape; no template marks a value safe: none of ours
holds markup made elsewhere), a name a template uses but is not given an error rather than
an empty string (StrictUndefined).

Python hands a template typed records (numbers, strings, dataclasses), never HTML: what a
node, a message or a spec says is escaped by the template that shows it.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined


def _fixed(value: float, places: int = 1) -> str:
    """A coordinate as the report writes it: `places` decimals ('12.5')."""
    return f"{value:.{places}f}"


def _number(value: float) -> str:
    """A number as Python's `format(value, 'g')`: '40', '2.5'."""
    return f"{value:g}"


ENVIRONMENT = Environment(
    loader=PackageLoader("pytest_cluster.report", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    auto_reload=False,  # installed files: each template is read and compiled once
)
ENVIRONMENT.filters["fixed"] = _fixed
ENVIRONMENT.filters["g"] = _number


def render(name: str, **data: object) -> str:
    """The template `name` rendered with `data`: HTML (or SVG)."""
    return ENVIRONMENT.get_template(name).render(**data)


def macros(name: str) -> Any:
    """The macros of template `name`, each called as a function returning its HTML: the
    pieces of a report part written a piece at a time, or of a table pytest-html
    assembles from cells."""
    return ENVIRONMENT.get_template(name).module
