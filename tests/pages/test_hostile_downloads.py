"""Downloads the console streams from the service (an extension's zip, a profile's archive) go out under
the console's own content type and file name: a hostile service cannot make one a page of the console's
origin (``text/html``, ``inline``) nor choose the name it is saved under."""

import http.server

import pytest

from tests.listener import serving

pytestmark = pytest.mark.django_db(transaction=True)

PAGE = b"<!doctype html><script>alert(document.cookie)</script>"


@pytest.fixture
def html_service(org):
    """A loopback service answering every GET with an HTML page it says to show inline."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Disposition", 'inline; filename="../../evil.html"')
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

    with serving(Handler) as org.service_base_url:
        org.save()
        yield


@pytest.mark.parametrize(
    ("path", "kind", "filename"),
    [
        ("extensions/ext_1/download/", "application/zip", "ext_1.zip"),
        ("profiles/prof_1/download/", "application/x-tar", "prof_1.tar"),
    ],
)
async def test_it_serves_an_upstream_download_under_its_own_type_and_name(
    operator_client, org, html_service, path, kind, filename
):
    response = await operator_client.get(f"/o/{org.slug}/{path}")
    assert response.status_code == 200
    assert response["Content-Type"] == kind
    assert response["Content-Disposition"] == f'attachment; filename="{filename}"'
    assert response["X-Content-Type-Options"] == "nosniff"
