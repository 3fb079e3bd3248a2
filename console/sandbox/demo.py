"""Realistic demo data for a tenant: every resource module seeds its own part."""

from __future__ import annotations

from console.sandbox.core.state import Tenant
from console.sandbox.resources import RESOURCES


def seed(tenant: Tenant) -> None:
    for module in RESOURCES:
        module.seed(tenant)
