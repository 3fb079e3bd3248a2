"""browser_jail.give: the browser's directories change hands without ever following a symlink."""

import os

import pytest

from console.sandbox import browser_jail

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")


def test_it_hands_a_directory_and_everything_in_it_to_the_user(tmp_path):
    top = tmp_path / "profile"
    (top / "Default" / "Cache").mkdir(parents=True)
    (top / "Default" / "Cookies").write_text("x")
    browser_jail.give(str(top), NOBODY, NOBODY)
    for path in (top, top / "Default", top / "Default" / "Cache", top / "Default" / "Cookies"):
        assert path.stat().st_uid == NOBODY


def test_it_never_follows_a_symlink_the_user_left_inside(tmp_path):
    outside = tmp_path / "root-owned"
    outside.mkdir()
    (outside / "secret").write_text("root's")
    top = tmp_path / "profile"
    top.mkdir()
    (top / "link-to-dir").symlink_to(outside)
    (top / "link-to-file").symlink_to(outside / "secret")
    browser_jail.give(str(top), NOBODY, NOBODY)
    assert outside.stat().st_uid == 0 and (outside / "secret").stat().st_uid == 0
    assert (top / "link-to-dir").lstat().st_uid == NOBODY  # the link itself changed hands


def test_it_refuses_a_top_directory_that_is_a_symlink(tmp_path):
    outside = tmp_path / "root-owned"
    outside.mkdir()
    (tmp_path / "profile").symlink_to(outside)
    with pytest.raises(OSError):
        browser_jail.give(str(tmp_path / "profile"), NOBODY, NOBODY)
    assert outside.stat().st_uid == 0
