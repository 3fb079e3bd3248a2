"""console.service.collection: the list, get, create, update and delete the resource modules share."""

import pytest

from console.service import NotFound, projects, proxies
from console.service.collection import Collection, given
from console.service.profiles import Profile


async def test_it_leaves_an_empty_filter_out_of_the_query(service):
    await projects.create_project(service, "alpha")
    everything = await projects.list_projects(service)
    assert [p.name for p in await projects.list_projects(service, name="", query="")] == [
        p.name for p in everything
    ]
    assert [p.name for p in await projects.list_projects(service, name="alpha")] == ["alpha"]


async def test_it_refuses_a_filter_the_collection_does_not_take(service):
    with pytest.raises(TypeError, match="domain"):
        await proxies.list_proxies(service, domain="example.com")


async def test_it_reads_creates_changes_and_deletes_a_member(service):
    profiles = Collection("/profiles", Profile, filters=("name", "query"))
    made = await profiles.create(service, {"name": "from-the-collection"})
    assert (await profiles.get(service, "from-the-collection")).id == made.id
    assert (await profiles.update(service, made.id, {"name": "renamed"})).label == "renamed"
    assert [p.id for p in await profiles.list(service, name="renamed")] == [made.id]
    await profiles.delete(service, made.id)
    with pytest.raises(NotFound):
        await profiles.get(service, made.id)


def test_it_addresses_a_member_by_a_path_segment():
    assert Collection("/profiles", Profile).at("a/b c", "/download") == "/profiles/a%2Fb%20c/download"


def test_given_keeps_what_is_not_none():
    assert given(name="", status=None, priority=0) == {"name": "", "priority": 0}
