"""Shared by the page tests of browser sessions."""

import pytest


@pytest.fixture
def quiet(tenant):
    """The tenant without the sandbox's generated telemetry: a test's own events are the only ones."""
    tenant.control("POST", "settings", {"telemetry_rate_per_second": 0})
    return tenant
