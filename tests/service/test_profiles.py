"""console.service.profiles against the sandbox (notes §8)."""

import io
import tarfile

import pytest

from console.service import Conflict, Invalid, NotFound, profiles


async def test_it_creates_gets_renames_and_deletes(service):
    created = await profiles.create_profile(service, "checkout-bot")
    assert created.id.startswith("prof_")
    assert created.created_at.tzinfo is not None
    assert (await profiles.get_profile(service, "checkout-bot")).id == created.id
    renamed = await profiles.rename_profile(service, created.id, "checkout-eu")
    assert renamed.label == "checkout-eu"
    await profiles.delete_profile(service, created.id)
    with pytest.raises(NotFound):
        await profiles.get_profile(service, created.id)


async def test_it_creates_an_unnamed_profile_labelled_by_its_id(service):
    created = await profiles.create_profile(service)
    assert created.name is None
    assert created.label == created.id


async def test_it_raises_conflict_for_a_taken_name_and_invalid_for_a_bad_one(service):
    await profiles.create_profile(service, "taken")
    with pytest.raises(Conflict) as conflict:
        await profiles.create_profile(service, "taken")
    assert conflict.value.code == "profile_name_taken"
    with pytest.raises(Invalid) as invalid:
        await profiles.create_profile(service, "has spaces")
    assert "name" in invalid.value.field_errors


async def test_it_lists_one_page_with_search(service):
    for n in range(7):
        await profiles.create_profile(service, f"shop-{n}")
    await profiles.create_profile(service, "other")
    page = await profiles.list_profiles(service, limit=5, query="shop")
    assert (len(page.items), page.has_more, page.next_offset) == (5, True, 5)
    rest = await profiles.list_profiles(service, limit=5, offset=5, query="shop")
    assert [p.name for p in rest] == ["shop-5", "shop-6"]
    assert not rest.has_more
    exact = await profiles.list_profiles(service, name="other")
    assert [p.name for p in exact] == ["other"]


async def test_it_streams_a_download_in_chunks(service):
    await profiles.create_profile(service, "archive")
    received = []
    async with profiles.download_profile(service, "archive") as (reply, chunks):
        assert reply.headers["content-type"] == "application/x-tar"
        async for chunk in chunks:
            received.append(chunk)
    with tarfile.open(fileobj=io.BytesIO(b"".join(received))) as archive:
        assert "profile/Local State" in archive.getnames()


async def test_it_refuses_an_unknown_format_before_sending(service):
    with pytest.raises(ValueError):
        async with profiles.download_profile(service, "x", format="zip"):
            pass
