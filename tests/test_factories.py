"""Every model has a factory, and each builds a row its model accepts (full_clean) with nothing given."""

import inspect

import factory
import pytest
from django.apps import apps

from tests import factories

pytestmark = pytest.mark.django_db

FRAMEWORK_APPS = {"admin", "auth", "contenttypes", "sessions", "axes", "otp_totp"}


def _factories():
    return [
        value
        for _, value in inspect.getmembers(factories, inspect.isclass)
        if issubclass(value, factory.django.DjangoModelFactory)
        and value is not factory.django.DjangoModelFactory
    ]


def test_every_model_of_the_service_has_a_factory():
    models = {
        model
        for model in apps.get_models()
        if model._meta.app_label not in FRAMEWORK_APPS and not model._meta.proxy
    }
    covered = {f._meta.model for f in _factories()}

    assert sorted(m._meta.label for m in models - covered) == []


@pytest.mark.parametrize("model_factory", _factories(), ids=lambda f: f.__name__)
def test_each_factory_builds_a_valid_row(model_factory):
    row = model_factory()

    # A field left at its model's own default (an empty JSON object, say) is the model's choice, not the factory's.
    defaults = [
        f.name
        for f in row._meta.concrete_fields
        if f.has_default() and getattr(row, f.attname) == f.get_default()
    ]
    row.full_clean(exclude=defaults, validate_unique=False)
    assert type(row).objects.filter(pk=row.pk).exists()
