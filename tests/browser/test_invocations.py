"""In Chromium: invoke an action from its generated form and watch the run live; deploy with progress."""

import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import watch_errors
from tests.sandbox.test_deployments import app_zip

pytestmark = pytest.mark.browser


def test_it_invokes_from_the_generated_form_and_watches_it_succeed_live(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    team.log_in(page, "operator")

    page.goto(team.url("apps/web-scraper/versions/1.2.0/"))
    page.locator("#action-get-page-title").get_by_role("link", name="Invoke…").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("get-page-title")

    # The form refuses what the schema refuses, next to the field, without leaving the page.
    page.get_by_label("url").fill("not a url")
    page.get_by_role("button", name="Invoke").click()
    expect(page.locator("#invoke-form")).to_contain_text("must be a full URL")

    page.get_by_label("url").fill("https://example.com")
    expect(page.get_by_label("wait_until")).to_have_value("load")  # the schema's default
    page.get_by_role("button", name="Invoke").click()

    page.wait_for_url(f"**{team.path()}invocations/inv_*/", timeout=10_000)
    summary = page.locator("#invocation-summary")
    expect(summary.locator(".chip")).to_have_text("Succeeded", timeout=15_000)
    expect(summary).to_contain_text("Example Domain")
    log = page.locator("#invocation-log")
    expect(log).to_contain_text("State: Running")
    expect(log).to_contain_text("Navigating to https://example.com")
    expect(log).to_contain_text("Action get-page-title finished")
    expect(page.get_by_role("link", name="Cancel invocation…")).to_have_count(0)
    expect(page.locator("#invocation-events .live-indicator")).to_contain_text("Ended")
    assert errors == []


def test_it_uploads_a_deployment_with_progress_and_follows_the_build(team, browser_page):
    page = browser_page
    errors = watch_errors(page)
    team.log_in(page)
    name = f"browser-app-{uuid.uuid4().hex[:6]}"

    page.goto(team.url("deployments/new/"))
    page.get_by_label("App source (.zip)").set_input_files(
        {"name": "app.zip", "mimeType": "application/zip", "buffer": app_zip(name=name)}
    )
    page.get_by_label("Version", exact=True).fill("0.1.0")
    page.get_by_label("Environment variables").fill("API_TOKEN=browser-secret-value")
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith("/deployments/new/")) as sent:
        page.get_by_role("button", name="Deploy").click()
    # Sent by static/js/deployments.js (XMLHttpRequest with upload progress), not a plain form post.
    assert sent.value.headers.get("hx-request") == "true"

    page.wait_for_url(f"**{team.path()}deployments/dep_*/", timeout=10_000)
    expect(page.locator("#deployment-summary .chip")).to_have_text("Running", timeout=15_000)
    expect(page.locator("#deployment-log")).to_contain_text(f"Serving {name} 0.1.0: actions greet, add")
    expect(page.locator("#deployment-summary")).to_contain_text("API_TOKEN")
    assert "browser-secret-value" not in page.content()
    assert errors == []
