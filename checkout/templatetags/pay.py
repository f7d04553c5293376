"""Template helpers of the hosted checkout page."""

from django import template

register = template.Library()


@register.filter
def lookup(mapping, key):
    """`mapping[key]` for a key held in a variable (the form's submitted values and errors by field name)."""
    try:
        return mapping.get(key, "")
    except AttributeError:
        return ""
