"""Template helpers of the dashboard."""

from django import template

from dashboard.roles import may as role_may

register = template.Library()


@register.filter
def may(member, action: str) -> bool:
    """`{% if member|may:"write" %}`: whether the member's role allows `action` (dashboard.roles)."""
    return member is not None and role_may(member.role, action)


@register.inclusion_tag("dashboard/_field.html")
def field(form, name: str, label: str, kind: str = "text", hint: str = "", options=None, **attrs):
    """`{% field form "name" "Name" maxlength=100 %}`: a labelled input (or `kind="textarea"`, or a select
    when `options` is a list of (value, text)) with the form's value and its error beside it, linked by
    aria-describedby. `attrs` become the input's attributes (maxlength, inputmode, class...)."""
    described = " ".join(
        part for part, shown in ((f"{name}-hint", hint), (f"{name}-error", name in form.errors)) if shown
    )
    return {
        "name": name,
        "label": label,
        "kind": kind,
        "hint": hint,
        "options": options,
        "value": form.values.get(name, ""),
        "error": form.errors.get(name),
        "described": described,
        "attrs": {key.replace("_", "-"): value for key, value in attrs.items()},
    }


@register.simple_tag
def test_chains() -> str:
    """`{% test_chains %}`: the chains test mode may use, by name (chains.testchains)."""
    from chains.registry import chain_get
    from chains.testchains import test_chain_ids

    return ", ".join(chain.name for chain in map(chain_get, test_chain_ids()) if chain is not None) or "none"
