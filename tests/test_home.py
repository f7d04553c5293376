"""The root URL is a small page that leads to the dashboard, the API docs and the admin."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_the_root_page_links_the_dashboard_the_docs_and_the_admin():
    page = Client().get("/")
    html = page.content.decode()
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    for target in ('href="/dashboard/"', 'href="/api/docs/"', 'href="/admin/"'):
        assert target in html
    assert "default-src 'self'" in page["Content-Security-Policy"]


def test_other_paths_and_methods_stay_the_order_interfaces_404():
    assert Client().post("/").json()["statusCode"] == 404
    assert Client().get("/nope").json() == {
        "success": False,
        "message": "No endpoint at GET /nope.",
        "statusCode": 404,
    }
