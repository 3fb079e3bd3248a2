"""`make run`'s banner (console/devbanner.py): printed once everything answers, framed, says what did not."""

from console import devbanner


def test_it_frames_the_addresses_and_logins_once_everything_answers():
    asked = []
    said = devbanner.lines(
        {"PORT": "8001", "SANDBOX_PORT": "8101", "DEMO_IDP_PORT": "8201", "DEMO_PASSWORD": "pw"},
        ready=lambda url: asked.append(url) or True,
        browsers=lambda sandbox: "simulated browser (test)",
    )
    assert sorted(asked) == [
        "http://127.0.0.1:8001/healthz",
        "http://127.0.0.1:8101/",
        "http://127.0.0.1:8201/",
    ]
    assert said[0] == "Console   http://127.0.0.1:8001/" and "demo / pw" in said[1]
    box = devbanner.framed(said).splitlines()
    assert box[0].startswith("╔") and box[-1].startswith("╚")
    assert len({len(line) for line in box}) == 1  # every line as wide as the frame


def test_it_says_which_process_did_not_answer(monkeypatch):
    monkeypatch.setattr(devbanner, "WAIT_SECONDS", 0.0)
    said = devbanner.lines({}, ready=lambda url: "8100" not in url, browsers=lambda sandbox: "?")
    assert said[0].startswith("Not answering after 0 s: sandbox")
