"""What a name the spec misspelled stands for: the closest known name (a did-you-mean,
ignoring case), a name written with other scripts' letters that look Latin ('host' with
a Cyrillic o), and those letters named."""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Sequence


def closest(word: str, choices: Sequence[str], cutoff: float) -> str | None:
    """The choice most like `word`, ignoring case (GPUs -> gpus), for a did-you-mean."""
    if len(word) > 64:  # no name is that long
        return None
    lowered = {choice.lower(): choice for choice in choices}
    folded = unicodedata.normalize("NFKC", word).translate(_LOOKALIKES).lower()
    match = difflib.get_close_matches(folded, list(lowered), n=1, cutoff=cutoff)
    return lowered[match[0]] if match else None


#: Letters of other scripts that look like Latin ones (Cyrillic, Greek), as they look.
_LOOKALIKES = str.maketrans(
    "аеорсухіјѕԁһӏкмнтвгпьАВЕКМНОРСТХІЈЅαεικνορτυχΑΒΕΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdhlkmhtbrnbABEKMHOPCTXIJSaeiknoptuxABEHIKMNOPTYX")


def lookalike(key: str, known: Sequence[str]) -> str | None:
    """The known key a name written with other scripts' letters stands for: the same once
    lookalike letters are read as Latin ('host' written with a Cyrillic o), or the only
    known key of its length whose every plain letter matches ('sla' written with a
    Cyrillic el)."""
    if len(key) > 64:
        return None
    folded = unicodedata.normalize("NFKC", key).translate(_LOOKALIKES)
    if folded in known:
        return folded
    plain = [i for i, c in enumerate(key) if c.isascii()]
    if len(plain) < max(2, len(key) - 2):
        return None
    fits = [k for k in known if len(k) == len(key) and all(k[i] == key[i] for i in plain)]
    return fits[0] if len(fits) == 1 else None


def foreign_letters(key: str) -> str:
    """The letters of `key` that are not plain ASCII, named: 'U+043B CYRILLIC SMALL
    LETTER EL at position 2'."""
    found = [f"U+{ord(c):04X} {unicodedata.name(c, 'UNNAMED')} at position {i + 1}"
             for i, c in enumerate(key) if not c.isascii()]
    return ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")


def written_with(value: str) -> str:
    """' (written with U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I at position
    2)' for a value with letters that are not plain ASCII (a name pasted from a document,
    that looks right and is not), else ''."""
    return f" (written with {foreign_letters(value)})" if not value.isascii() else ""
