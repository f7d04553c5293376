import pytest
from django.core.management import CommandError, call_command

from platform_api.models import ApiKey, Organization
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def test_create_api_key_creates_the_organization_and_prints_the_key_last(capsys):
    call_command("create_api_key", "--org", "newco", "--name", "ops", "--permissions", "read,write")

    lines = capsys.readouterr().out.strip().splitlines()
    raw = lines[-1]
    assert raw.startswith("svc_live_")
    key = ApiKey.objects.get(name="ops")
    assert key.organization == Organization.objects.get(slug="newco")
    assert key.permissions == ["read", "write"]
    assert client_for(raw).get("/api/v1/events").status_code == 200


def test_create_api_key_reuses_an_existing_organization(organization, capsys):
    call_command("create_api_key", "--org", "acme", "--name", "second", "--permissions", "admin")
    assert Organization.objects.count() == 1
    assert ApiKey.objects.get(name="second").organization == organization


@pytest.mark.parametrize(
    "args",
    [
        ["--org", "x", "--name", "n", "--permissions", "root"],
        ["--org", "x", "--name", "n", "--permissions", ","],
        ["--org", "Not A Slug!", "--name", "n", "--permissions", "read"],
        ["--org", "x", "--name", "n", "--expires-at", "tomorrow"],
    ],
)
def test_create_api_key_refuses_bad_arguments_and_writes_nothing(args):
    with pytest.raises(CommandError):
        call_command("create_api_key", *args)
    assert not ApiKey.objects.exists()
    assert not Organization.objects.exists()
