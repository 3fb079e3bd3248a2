"""Realistic demo data for a tenant: every resource module that has demo data seeds its own part."""

from __future__ import annotations

from console.sandbox.core.state import Tenant
from console.sandbox.resources import RESOURCES


def seed(tenant: Tenant) -> None:
    for module in RESOURCES:
        if seed_part := getattr(module, "seed", None):
            seed_part(tenant)
