"""Browser sessions (notes §2): create, get, update, list, delete.

The record has no status: a session is ended once it carries ``deleted_at`` (deleted, or timed out after
``timeout_seconds`` of inactivity). ``tags`` filters travel deepObject style (``tags[team]=checkout``).
"""

from __future__ import annotations

from dataclasses import field
from datetime import UTC, datetime, timedelta
from typing import Any

from console.service.collection import browser_path
from console.service.contract import CAPTURE_CATEGORIES
from console.service.http import Service, request
from console.service.pagination import Page, fetch_page
from console.service.records import Count, Millis, Pixels, Record, Seconds, obj

__all__ = [
    "Ref",
    "Session",
    "Viewport",
    "create_session",
    "delete_session",
    "get_session",
    "list_sessions",
    "update_session",
]


class Ref(Record):
    """``{id, name}`` of a profile, proxy, extension or pool."""

    id: str | None = None
    name: str | None = None
    mode: str | None = None  # proxies only: direct | default

    @property
    def label(self) -> str:
        return self.name or self.id or self.mode or ""


class Viewport(Record):
    width: Pixels | None = None
    height: Pixels | None = None
    refresh_rate: Count | None = None

    def __str__(self) -> str:
        rate = f" @ {self.refresh_rate} Hz" if self.refresh_rate else ""
        return f"{self.width}\u00d7{self.height}{rate}"


class Usage(Record):
    uptime_ms: Millis | None = None


class SandboxInfo(Record):
    """What the sandbox adds to a session (``sandbox``, not in the contract)."""

    engine: str | None = None  # chromium | simulated
    browser: str | None = None  # running | standby | crashed | simulated (docs/sandbox.md)
    read_only_live_view_url: str | None = None


class Session(Record):
    session_id: str
    created_at: datetime | None = None
    name: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    headless: bool = False
    stealth: bool = False
    kiosk_mode: bool = False
    gpu: bool = False
    memory: str | None = None
    region: str | None = None
    timeout_seconds: Seconds | None = None
    viewport: Viewport | None = None
    profile: Ref | None = None
    profile_save_changes: bool | None = None
    proxy: Ref | None = None
    proxy_id: str | None = None
    extensions: list[Ref] = field(default_factory=list)
    pool: Ref | None = None
    start_url: str | None = None
    invocation_id: str | None = None
    telemetry: dict[str, Any] | None = None
    usage: Usage | None = None
    browser_live_view_url: str | None = None
    cdp_ws_url: str | None = None
    webdriver_ws_url: str | None = None
    base_url: str | None = None
    chrome_policy: dict[str, Any] | None = None
    network: dict[str, Any] | None = None
    deleted_at: datetime | None = None
    sandbox: SandboxInfo | None = None

    @property
    def id(self) -> str:
        return self.session_id

    @property
    def label(self) -> str:
        return self.name or self.session_id

    @property
    def simulated(self) -> bool:
        """The sandbox's simulated engine runs this session (``sandbox`` is a sandbox-only field)."""
        return self.sandbox is not None and self.sandbox.engine == "simulated"

    @property
    def read_only_live_view_url(self) -> str | None:
        """The sandbox's view-only live view link: its token cannot be made interactive."""
        return self.sandbox.read_only_live_view_url if self.sandbox is not None else None

    @property
    def ended(self) -> bool:
        return self.deleted_at is not None

    @property
    def uptime(self) -> timedelta | None:
        if self.usage is not None and self.usage.uptime_ms is not None:
            return timedelta(milliseconds=self.usage.uptime_ms)
        if isinstance(self.created_at, datetime):
            end = self.deleted_at if isinstance(self.deleted_at, datetime) else datetime.now(UTC)
            return end - self.created_at
        return None

    @property
    def telemetry_categories(self) -> list[str]:
        """The captured categories, in display order (empty when telemetry is off)."""
        browser = obj(obj(self.telemetry).get("browser"))
        return [c for c in CAPTURE_CATEGORIES if obj(browser.get(c)).get("enabled") is True]

    @property
    def telemetry_enabled(self) -> bool:
        return bool(self.telemetry_categories)

    @property
    def proxy_label(self) -> str:
        if self.proxy is not None:
            return self.proxy.label
        return self.proxy_id or ""


def tag_params(tags: dict[str, str] | None) -> dict[str, str]:
    """``{"team": "checkout"}`` → ``{"tags[team]": "checkout"}`` (deepObject; pairs are ANDed)."""
    return {f"tags[{key}]": value for key, value in (tags or {}).items()}


async def list_sessions(
    svc: Service,
    *,
    limit: int = 20,
    offset: int = 0,
    query: str | None = None,
    status: str = "active",
    region: str | None = None,
    tags: dict[str, str] | None = None,
) -> Page[Session]:
    params = {"query": query or None, "status": status, "region": region or None, **tag_params(tags)}
    return await fetch_page(svc, "/browsers", Session, limit=limit, offset=offset, params=params)


async def get_session(svc: Service, id_or_name: str, *, include_deleted: bool = False) -> Session:
    params = {"include_deleted": True} if include_deleted else None
    return Session.from_json((await request(svc, "GET", browser_path(id_or_name), params=params)).data)


async def create_session(svc: Service, **body: Any) -> Session:
    """``body``: the create fields of notes §2 in their wire shape (``profile={"name": ..}``, ...)."""
    return Session.from_json((await request(svc, "POST", "/browsers", json=body)).data)


async def update_session(svc: Service, id_or_name: str, **body: Any) -> Session:
    """PATCH: name (``""`` clears), tags (replace the whole set), telemetry, proxy, profile, viewport."""
    return Session.from_json((await request(svc, "PATCH", browser_path(id_or_name), json=body)).data)


async def delete_session(svc: Service, id_or_name: str) -> None:
    """Ends the session (soft delete: it keeps ``deleted_at``); its streams close."""
    await request(svc, "DELETE", browser_path(id_or_name), expect="none")
