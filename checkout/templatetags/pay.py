"""Template helpers of the hosted checkout page."""

from decimal import Decimal, InvalidOperation

from django import template
from django.utils.formats import number_format

register = template.Library()


@register.filter
def lookup(mapping, key):
    """`mapping[key]` for a key held in a variable (the form's submitted values and errors by field name)."""
    try:
        return mapping.get(key, "")
    except AttributeError:
        return ""


@register.filter
def units(value):
    """A token amount as the service writes it (`1234.5`), in the reader's language (`1,234.5`, `1.234,5`),
    every digit kept."""
    text = str(value)
    try:
        number = Decimal(text)
    except (InvalidOperation, ValueError):
        return value
    return number_format(number, decimal_pos=len(text.partition(".")[2]), use_l10n=True, force_grouping=True)
