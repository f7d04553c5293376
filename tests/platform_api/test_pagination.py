import pytest

from tests.factories import make_api_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def five_keys(organization, admin_key):
    # admin_key is the oldest; four more are added after it.
    return [admin_key[0]] + [
        make_api_key(organization, name=f"k{i}", permissions=["read"])[0] for i in range(4)
    ]


def test_pages_cover_every_item_once_with_has_more(admin_client, five_keys):
    first = admin_client.get("/api/v1/api-keys?limit=2").json()
    second = admin_client.get("/api/v1/api-keys?limit=2&page=2").json()
    third = admin_client.get("/api/v1/api-keys?limit=2&page=3").json()

    assert [len(p["data"]) for p in (first, second, third)] == [2, 2, 1]
    assert [p["has_more"] for p in (first, second, third)] == [True, True, False]
    assert {p["total_count"] for p in (first, second, third)} == {5}
    ids = [k["id"] for p in (first, second, third) for k in p["data"]]
    assert ids == [k.id for k in reversed(five_keys)]


def test_sort_and_order(admin_client, five_keys):
    body = admin_client.get("/api/v1/api-keys?sort=name&order=asc").json()
    assert [k["name"] for k in body["data"]] == ["admin", "k0", "k1", "k2", "k3"]


def test_default_limit_is_20(admin_client, organization, admin_key):
    for i in range(21):
        make_api_key(organization, name=f"n{i}", permissions=["read"])
    body = admin_client.get("/api/v1/api-keys").json()
    assert len(body["data"]) == 20
    assert body["has_more"] is True
    assert body["total_count"] == 22


@pytest.mark.parametrize(
    ("query", "param"),
    [
        ("limit=101", "limit"),
        ("limit=0", "limit"),
        ("limit=ten", "limit"),
        ("page=0", "page"),
        ("page=-1", "page"),
        ("sort=key_digest", "sort"),
        ("order=up", "order"),
    ],
)
def test_bad_list_parameters_are_400_naming_the_parameter(admin_client, query, param):
    response = admin_client.get(f"/api/v1/api-keys?{query}")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_field_value"
    assert response.json()["error"]["param"] == param


def test_page_past_the_end_is_empty(admin_client, admin_key):
    body = admin_client.get("/api/v1/api-keys?page=9").json()
    assert body["data"] == []
    assert body["has_more"] is False
    assert body["total_count"] == 1


@pytest.mark.parametrize(
    ("page", "limit", "queries", "rows", "total"),
    [
        (1, 20, 1, 5, 5),  # a short first page is the whole list: no count
        (3, 2, 1, 1, 5),  # a short last page tells the total too
        (1, 2, 2, 2, 5),  # a full page needs the count
        (4, 2, 2, 0, 5),  # past the end: empty, and the count
    ],
)
def test_total_costs_a_query_only_when_the_page_cannot_tell_it(
    five_keys, organization, django_assert_num_queries, page, limit, queries, rows, total
):
    from platform_api.pagination import ListParams
    from platform_api.selectors import api_key_list

    params = ListParams(page=page, limit=limit, sort="created_at", order="desc")
    with django_assert_num_queries(queries):
        found, counted = params.apply(api_key_list(organization=organization))
    assert (len(found), counted) == (rows, total)


@pytest.mark.parametrize(
    ("page", "limit", "rows", "total"),
    [(1, 2, 2, 3), (2, 2, 1, 3), (3, 2, 0, 3), (1, 20, 3, 3), (1, 3, 3, 3)],
)
def test_a_count_bound_is_a_window_on_the_first_matches(five_keys, organization, page, limit, rows, total):
    from platform_api.pagination import ListParams
    from platform_api.selectors import api_key_list

    params = ListParams(page=page, limit=limit, sort="created_at", order="desc")
    found, counted = params.apply(api_key_list(organization=organization), count_bound=3)

    assert (len(found), counted) == (rows, total)
    newest_three = [k.pk for k in reversed(five_keys)][:3]
    assert [k.pk for k in found] == newest_three[(page - 1) * limit : page * limit]
