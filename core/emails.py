"""Email addresses people type, and error text that may carry them.

Every address a payer or member types is checked with Django's own validator (which refuses CR, LF and
anything else a mail header could be split with), and an error kept in a column or a log never carries an
address: `redacted` keeps the exception's class and its message with every address taken out.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError
from django.core.validators import validate_email

MAX_LENGTH = 254  # RFC 5321's path limit, as Django's EmailField
ADDRESS_LIKE = re.compile(r"[^\s<>()\[\],;:\"'@]+@[^\s<>()\[\],;:\"'@]+")


def is_email(text: str) -> bool:
    """Whether `text` is one email address (Django's EmailValidator), nothing around it."""
    if not text or len(text) > MAX_LENGTH:
        return False
    try:
        validate_email(text)
    except ValidationError:
        return False
    return True


def redacted(exc: BaseException, *known: str) -> str:
    """`Class: message` with the addresses `known` (and anything shaped like an address) taken out, on one
    line, at most 500 characters: what an error column or a log may keep."""
    text = str(exc)
    for value in known:
        if value:
            text = text.replace(value, "[address]")
    text = ADDRESS_LIKE.sub("[address]", text)
    return f"{type(exc).__name__}: {' '.join(text.split())}"[:500]
