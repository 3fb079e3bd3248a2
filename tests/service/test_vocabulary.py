"""The service's vocabulary is written once in the client (console/service/contract.py) and the sandbox
keeps its own lists: each of the client's is held against the sandbox's, so neither can drift.

The sandbox's constants are looked up by name wherever they stand in console/sandbox/ (a module named
after the resource, whatever wing it sits in), so moving its modules does not break this test, and a
constant that vanishes or appears twice fails it with the places it found.
"""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path

import pytest

from console.service import contract

pytest.importorskip("starlette")  # the sandbox's own packages (requirements/sandbox.txt)

SANDBOX = Path(__file__).resolve().parents[2] / "console" / "sandbox"


@cache
def _assignments() -> dict[str, list[str]]:
    """Each module-level constant of the sandbox → the dotted modules that assign it."""
    found: dict[str, list[str]] = {}
    for path in sorted(SANDBOX.rglob("*.py")):
        module = ".".join(path.relative_to(SANDBOX.parents[1]).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            for target in targets:
                if isinstance(target, ast.Name) and target.id.isupper():
                    found.setdefault(target.id, []).append(module.removesuffix(".__init__"))
    return found


def sandbox(resource: str, name: str):
    """The sandbox's ``name`` from its module for ``resource`` (``browsers``: resources/browsers.py, or a
    ``browsers`` package of a wing, or a module inside one)."""
    modules = [m for m in _assignments().get(name, []) if resource in m.split(".")]
    assert len(modules) == 1, f"the sandbox's {resource} {name}: found in {modules or 'no module'}"
    return getattr(importlib.import_module(modules[0]), name)


def test_it_refuses_the_chrome_policies_the_sandbox_refuses():
    assert set(contract.BLOCKED_POLICIES) == set(sandbox("browsers", "BLOCKED_POLICIES"))


def test_it_knows_the_telemetry_categories():
    assert set(contract.CAPTURE_CATEGORIES) == set(sandbox("browsers", "CATEGORIES"))
    assert set(contract.OPERATIONAL_CATEGORIES) == set(sandbox("browsers", "OPERATIONAL"))
    assert set(contract.CAPTURE_CATEGORIES) == set(sandbox("pools", "CATEGORIES"))
    assert set(contract.OPERATIONAL_CATEGORIES) == set(sandbox("pools", "DEFAULT_ON"))
    assert set(contract.CATEGORIES) == set(sandbox("telemetry", "ALL_CATEGORIES"))
    assert set(contract.CDP_CATEGORIES) == set(sandbox("telemetry", "CDP_CATEGORIES"))


def test_it_knows_each_event_type_and_its_category():
    types = {kind: row[0] for kind, row in sandbox("telemetry", "TYPES").items()}
    assert types == contract.NOTES_EVENT_TYPES
    # The SDK's additions are the client's own (docs/service-changes.md §3), in known categories.
    assert not set(contract.SDK_EVENT_TYPES) & set(types)
    assert set(contract.EVENT_TYPES.values()) <= {*contract.CATEGORIES, "platform"}


@pytest.mark.parametrize(
    ("ours", "resource", "theirs"),
    [
        ("SESSION_STATUSES", "browsers", "STATUSES"),
        ("API_KEY_STATUSES", "api_keys", "STATUSES"),
        ("API_KEY_SORTS", "api_keys", "SORTS"),
        ("PROXY_TYPES", "proxies", "TYPES"),
        ("LEGACY_PROXY_TYPES", "proxies", "LEGACY_TYPES"),
        ("PROXY_PROTOCOLS", "proxies", "PROTOCOLS"),
        ("PROXY_OS", "proxies", "RESIDENTIAL_OS"),
        ("PROXY_CONFIG_FIELDS", "proxies", "CONFIG_FIELDS"),
        ("PROFILE_FORMATS", "profiles", "FORMATS"),
        ("VAULT_FIELD_TYPES", "vaults", "FIELD_TYPES"),
        ("CREDENTIAL_PROVIDER_TYPES", "credential_providers", "TYPES"),
        ("PROJECT_LIMIT_FIELDS", "projects", "LIMIT_FIELDS"),
        ("MOUSE_BUTTONS", "browser_computer", "BUTTONS"),
        ("COMPUTER_ACTION_TYPES", "browser_computer", "BATCH_ACTIONS"),
        ("PROCESS_SIGNALS", "browser_processes", "SIGNALS"),
        ("CURL_METHODS", "browser_tools", "METHODS"),
        ("SUPERVISOR_PROCESSES", "browser_tools", "SUPERVISOR_PROCESSES"),
        ("TERMINAL_FLOW_STATUSES", "auth_connections", "TERMINAL"),
        ("TIMELINE_TYPES", "auth_connections", "TIMELINE_TYPES"),
        ("INVOCATION_STATUSES", "invocations", "STATUSES"),
        ("TERMINAL_INVOCATION_STATUSES", "invocations", "TERMINAL"),
        ("DEPLOYMENT_STATUSES", "deployments", "STATUSES"),
        ("TERMINAL_DEPLOYMENT_STATUSES", "deployments", "TERMINAL"),
        ("DEPLOYMENT_REGIONS", "deployments", "REGIONS"),
    ],
)
def test_it_speaks_the_sandboxs_words(ours, resource, theirs):
    mine, its = getattr(contract, ours), sandbox(resource, theirs)
    if isinstance(mine, dict):
        assert {k: set(v) for k, v in mine.items()} == {k: set(v) for k, v in its.items()}
    else:
        assert set(mine) == set(its)


def test_its_lists_hold_no_value_twice():
    for name in dir(contract):
        value = getattr(contract, name)
        if name.isupper() and isinstance(value, tuple):
            assert len(set(value)) == len(value), name


def test_its_viewport_presets_are_what_a_session_accepts():
    assert contract.DEFAULT_VIEWPORT in contract.VIEWPORT_PRESETS
    default = sandbox("browsers", "DEFAULT_VIEWPORT")
    assert contract.preset_viewport(contract.DEFAULT_VIEWPORT) == default
    for preset in contract.VIEWPORT_PRESETS:
        viewport = contract.preset_viewport(preset)
        assert 1 <= viewport["refresh_rate"] <= 60 and viewport["width"] > 0 and viewport["height"] > 0
