"""The periodic sweep of replays past their retention (``browser_replays.sweep``): the replays nobody
reads again lost their 404 for the API, but their video stayed on disk for as long as the sandbox ran.
The read path is tested on real recordings in ``test_chromium.py``."""

from datetime import timedelta

from console.sandbox.app import assemble
from console.sandbox.core.state import Registry
from console.sandbox.resources import browser_replays

# These tests use the sandbox's objects in-process (a registry, the store): wired as the app wires them.
assemble()


DAY = 86400


def recorded(tenant, root, replay_id, *, recording=False):
    """A session record holding one replay whose video is a file under ``root``, as the recorder leaves it."""
    directory = root / "replays" / replay_id
    directory.mkdir(parents=True)
    (directory / "replay.mp4").write_bytes(b"\0\0\0\x18ftypmp42")
    replay = {
        "replay_id": replay_id,
        "started_at": tenant.now(),
        "finished_at": None if recording else tenant.now(),
        "token": "t",
        "_recorder": object() if recording else None,
        "_file": directory / "replay.mp4",
    }
    record = tenant.table("browsers").setdefault(f"bs_{replay_id}", {"session_id": f"bs_{replay_id}"})
    record.setdefault("_replays", {})[replay_id] = replay
    return record, directory


def test_it_sweeps_a_replay_past_its_retention_and_never_one_within_it(tmp_path):
    registry = Registry()
    tenant = registry.create()
    record, directory = recorded(tenant, tmp_path, "rep_old")
    assert browser_replays.sweep(registry.tenants.values()) == 0
    tenant.advance(29 * DAY)
    assert browser_replays.sweep(registry.tenants.values()) == 0
    assert (directory / "replay.mp4").exists() and "rep_old" in record["_replays"]
    tenant.advance(2 * DAY)
    assert browser_replays.sweep(registry.tenants.values()) == 1
    assert not directory.exists()
    assert record["_replays"] == {}


def test_it_leaves_a_replay_still_recording_to_a_later_sweep(tmp_path):
    registry = Registry()
    tenant = registry.create()
    record, directory = recorded(tenant, tmp_path, "rep_busy", recording=True)
    tenant.advance(31 * DAY)
    assert browser_replays.sweep(registry.tenants.values()) == 0
    assert directory.exists()
    record["_replays"]["rep_busy"]["_recorder"] = None  # the encoding ended
    assert browser_replays.sweep(registry.tenants.values()) == 1
    assert not directory.exists()


def test_it_removes_only_the_replays_own_directory(tmp_path):
    """A record whose file is not in ``replays/<its id>/`` loses that file, never the directory it is in."""
    registry = Registry()
    tenant = registry.create()
    record, _ = recorded(tenant, tmp_path, "rep_odd")
    elsewhere = tmp_path / "keep"
    elsewhere.mkdir()
    (elsewhere / "other.txt").write_text("kept")
    (elsewhere / "replay.mp4").write_bytes(b"x")
    record["_replays"]["rep_odd"]["_file"] = str(elsewhere / "replay.mp4")
    record["_replays"]["rep_odd"]["started_at"] -= timedelta(days=31)
    assert browser_replays.sweep(registry.tenants.values()) == 1
    assert (elsewhere / "other.txt").read_text() == "kept"
    assert not (elsewhere / "replay.mp4").exists()
