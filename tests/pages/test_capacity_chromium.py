"""Standby counts against the cap (issue 23): with real browsers and two running at most, a third session
puts one to sleep, and the pages say so, still counting it."""

import pytest

from tests.pages.test_capacity import HTMX, page, text
from tests.sandbox_fixtures import wait_until

pytestmark = pytest.mark.chromium


@pytest.fixture
def tenant(chromium_tenant):
    """The organization's tenant lives on the sandbox whose sessions run Chromium (two at once at most)."""
    return chromium_tenant


def states(tenant) -> list[str]:
    return sorted(s["sandbox"]["browser"] for s in tenant.call("GET", "/browsers").json())


async def test_it_counts_sessions_in_standby_and_says_so(viewer_client, tenant):
    tenant.call("PATCH", "/org/limits", json={"default_project_max_concurrent_sessions": 5})
    body = {"headless": True, "timeout_seconds": 600, "viewport": {"width": 640, "height": 480}}
    for _ in range(3):
        assert tenant.call("POST", "/browsers", json=body, timeout=60).status_code == 201
    # Each create wakes its browser; the third puts the least recently used one in standby.
    wait_until(lambda: states(tenant) == ["running", "running", "standby"], seconds=60, what="one in standby")
    for path in ("?part=card-sessions", "pools/?wait=1", "browsers/wall/"):
        said = text(await page(viewer_client, path, **(HTMX if path.startswith("?") else {})))
        assert "3 of 5 concurrent sessions in use in this project" in said, path
        assert "3 on-demand sessions (2 running, 1 in standby)" in said, path
    # The sleeping session's tile says why it shows nothing yet.
    wall = await page(viewer_client, "browsers/wall/")
    assert wall.count('data-standby="In standby: 2 of this project&#x27;s browsers running.') == 1
    # The awake ones show a still picture at once; the sleeping one none (the picture would wake it).
    assert wall.count("/computer/screenshot.png") == 2
    asleep = next(
        s["session_id"]
        for s in tenant.call("GET", "/browsers").json()
        if s["sandbox"]["browser"] == "standby"
    )
    assert f"/browsers/{asleep}/computer/screenshot.png" not in wall
