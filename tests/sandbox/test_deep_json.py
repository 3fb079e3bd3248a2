"""What a tenant sends may be kept in the state file, whose encoder recurses: a value nested deep enough
to overflow it made every save that included the tenant fail (the periodic saves of every tenant and the
last one at shutdown among them). Such a body is refused before anything is kept."""

import io
import zipfile

import httpx

from console.sandbox.core.http import MAX_DEPTH
from tests.sandbox.test_deployments import build_failure

APP = 'from kernel import App\n\napp = App("deep")\n'


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def post_raw(tenant, path: str, text: str) -> httpx.Response:
    return httpx.post(
        f"{tenant.url}{path}",
        content=text,
        headers={"Authorization": f"Bearer {tenant.api_key}", "Content-Type": "application/json"},
    )


def test_it_refuses_a_body_nested_past_the_bound(tenant):
    response = post_raw(tenant, "/_sandbox/settings", '{"x": ' + nested(500) + "}")
    assert response.status_code == 400, response.text
    assert "deeper" in response.json()["message"]
    response = post_raw(tenant, "/browsers", '{"metadata": ' + nested(MAX_DEPTH) + "}")
    assert response.status_code == 400 and "deeper" in response.json()["message"]


def test_it_refuses_a_body_too_deep_for_the_json_parser_as_bad_input(tenant):
    response = post_raw(tenant, "/_sandbox/settings", '{"x": ' + nested(100_000) + "}")
    assert response.status_code == 400, response.text


def test_it_takes_a_body_within_the_bound(tenant):
    # The clock takes (and ignores) fields besides its own; settings refuse any that is not a setting.
    body = '{"advance_seconds": 0, "x": ' + nested(MAX_DEPTH - 1) + "}"
    response = post_raw(tenant, "/_sandbox/clock", body)
    assert response.status_code == 200, response.text


def test_it_refuses_an_app_whose_action_schemas_nest_past_the_bound(tenant):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("main.py", APP)
        archive.writestr("actions.json", '{"greet": ' + nested(500) + "}")
    assert "deeper" in build_failure(tenant, buffer.getvalue())
