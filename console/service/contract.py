"""The service's vocabulary, written once (STYLE habit 14): the values its interface enumerates.

Telemetry categories and event types, blocked Chrome policies, viewport presets, proxy types, the statuses
of sessions, connections, flows, invocations and deployments, and the other closed lists the notes (and
the SDK where docs/service-changes.md says so) spell out. The service modules, the forms and the pages
import them from here and never write a list of their own; tests/service/test_vocabulary.py holds each
list against the sandbox's, so the console and its local service cannot drift apart.
"""

from __future__ import annotations

# Telemetry (notes §6) -----------------------------------------------------------------------------------

# §6.3: operational categories are on whenever telemetry is (each can be turned off); CDP ones are opt-in.
OPERATIONAL_CATEGORIES = ("control", "connection", "system", "captcha")
CDP_CATEGORIES = ("console", "network", "page", "interaction")
# What a session's or a pool's ``telemetry.browser`` configures, in display order.
CAPTURE_CATEGORIES = (*CDP_CATEGORIES, *OPERATIONAL_CATEGORIES, "screenshot")
# The categories events carry: ``monitor`` (the collector's health) is not configurable, it comes along.
CATEGORIES = (*CAPTURE_CATEGORIES, "monitor")

# §6.4: the 31 event types and their categories.
NOTES_EVENT_TYPES = {
    "console_log": "console",
    "console_error": "console",
    "network_request": "network",
    "network_response": "network",
    "network_loading_failed": "network",
    "network_idle": "network",
    "proxy_error": "network",
    "page_navigation": "page",
    "page_dom_content_loaded": "page",
    "page_load": "page",
    "page_tab_opened": "page",
    "page_layout_shift": "page",
    "page_lcp": "page",
    "page_layout_settled": "page",
    "page_navigation_settled": "page",
    "interaction_click": "interaction",
    "interaction_key": "interaction",
    "interaction_scroll_settled": "interaction",
    "monitor_screenshot": "screenshot",
    "monitor_disconnected": "monitor",
    "monitor_reconnected": "monitor",
    "monitor_reconnect_failed": "monitor",
    "monitor_init_failed": "monitor",
    "api_call": "control",
    "cdp_connect": "connection",
    "cdp_disconnect": "connection",
    "live_view_connect": "connection",
    "live_view_disconnect": "connection",
    "captcha_solve_result": "captcha",
    "system_oom_kill": "system",
    "service_crashed": "system",
}
# SDK 0.131 adds these (docs/service-changes.md §3); the sandbox does not emit them.
SDK_EVENT_TYPES = {
    "captcha_solve_started": "captcha",
    "captcha_challenge_result": "captcha",
    "cdp_command": "control",
    "page_crashed": "page",
    "platform_api_call": "platform",
}
EVENT_TYPES = {**NOTES_EVENT_TYPES, **SDK_EVENT_TYPES}

# Browser sessions (notes §2) -----------------------------------------------------------------------------

# The ``status`` filter of ``GET /browsers``.
SESSION_STATUSES = ("active", "deleted", "all")
# Chrome policies the service manages itself (extensions, proxy, CDP and the DevTools behind it) and refuses
# in a ``chrome_policy``.
BLOCKED_POLICIES = (
    "ExtensionInstallForcelist",
    "ExtensionInstallAllowlist",
    "ExtensionInstallBlocklist",
    "ExtensionSettings",
    "ProxySettings",
    "ProxyMode",
    "ProxyServer",
    "ProxyPacUrl",
    "ProxyBypassList",
    "RemoteDebuggingAllowed",
    "DeveloperToolsAvailability",
)
# The known-good viewports, ``WxH@R`` (width by height at a refresh rate).
VIEWPORT_PRESETS = (
    "2560x1440@10",
    "1920x1080@25",
    "1920x1200@25",
    "1440x900@25",
    "1280x800@60",
    "1024x768@60",
    "1200x800@60",
    "768x1024@60",
    "390x844@60",
)
DEFAULT_VIEWPORT = "1920x1080@25"


def preset_viewport(preset: str) -> dict[str, int]:
    """``WxH@R`` as the ``viewport`` object of a create or update body."""
    size, _, rate = preset.partition("@")
    width, _, height = size.partition("x")
    return {"width": int(width), "height": int(height), "refresh_rate": int(rate)}


# A session's computer (notes §3), processes (§5), files (§4) and tools.
MOUSE_BUTTONS = ("left", "right", "middle", "back", "forward")
COMPUTER_ACTION_TYPES = (
    "move_mouse",
    "click_mouse",
    "type_text",
    "press_key",
    "scroll",
    "drag_mouse",
    "set_cursor",
    "sleep",
)
PROCESS_SIGNALS = ("TERM", "KILL", "INT", "HUP")
FILE_WATCH_TYPES = ("CREATE", "WRITE", "DELETE", "RENAME")
CURL_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
SUPERVISOR_PROCESSES = ("chromium", "kernel-images-api", "neko", "xvfb")
# What a replay's video may be sent as.
REPLAY_VIDEO_TYPES = ("video/mp4", "video/webm", "application/octet-stream")

# Auth connections and their login flows (notes §9) ---------------------------------------------------------

NEEDS_AUTH, AUTHENTICATED = "NEEDS_AUTH", "AUTHENTICATED"
CONNECTION_STATUSES = (NEEDS_AUTH, AUTHENTICATED)
FLOW_IN_PROGRESS = "IN_PROGRESS"
FLOW_SUCCESS = "SUCCESS"
FAILED_FLOW_STATUSES = frozenset({"FAILED", "EXPIRED", "CANCELED"})
TERMINAL_FLOW_STATUSES = frozenset({FLOW_SUCCESS, *FAILED_FLOW_STATUSES})
FLOW_STATUSES = (FLOW_IN_PROGRESS, FLOW_SUCCESS, "FAILED", "EXPIRED", "CANCELED")
AWAITING_INPUT, AWAITING_EXTERNAL_ACTION = "AWAITING_INPUT", "AWAITING_EXTERNAL_ACTION"
FLOW_STEPS = ("DISCOVERING", AWAITING_INPUT, AWAITING_EXTERNAL_ACTION, "SUBMITTING", "COMPLETED")
# The steps at which a flow waits for someone.
AWAITING_STEPS = (AWAITING_INPUT, AWAITING_EXTERNAL_ACTION)
TIMELINE_TYPES = ("login", "reauth", "health_check")

# Apps: invocations (notes §12) and deployments (§13) ------------------------------------------------------

INVOCATION_STATUSES = ("queued", "running", "succeeded", "failed")
TERMINAL_INVOCATION_STATUSES = frozenset({"succeeded", "failed"})
DEPLOYMENT_STATUSES = ("queued", "in_progress", "running", "failed", "stopped")
# Not built yet (queued, or building).
BUILDING_DEPLOYMENT_STATUSES = ("queued", "in_progress")
ACTIVE_DEPLOYMENT_STATUSES = frozenset({*BUILDING_DEPLOYMENT_STATUSES, "running"})
TERMINAL_DEPLOYMENT_STATUSES = frozenset({"stopped", "failed"})
DEPLOYMENT_REGIONS = ("aws.us-east-1a",)

# Configuration resources -------------------------------------------------------------------------------

# The types a proxy can be created with (SDK 0.131; docs/service-changes.md §5).
PROXY_TYPES = ("isp", "residential", "mobile", "custom")
# Retired types: existing records are still listed, checked and deleted, never created.
LEGACY_PROXY_TYPES = ("datacenter",)
# The config fields each type takes (notes §11).
PROXY_PROTOCOLS = ("https", "http")
PROXY_OS = ("windows", "macos", "android")  # a residential proxy's ``os``
PROXY_CONFIG_FIELDS = {
    "datacenter": ("country",),
    "isp": ("country",),
    "residential": ("country", "city", "state", "zip", "asn", "os"),
    "mobile": ("country", "state", "city"),
    "custom": ("host", "port", "username", "password", "ca_bundle"),
}
PROFILE_FORMATS = ("tar", "tar.zst")
VAULT_FIELD_TYPES = ("text", "email", "password", "totp", "passkey")
CREDENTIAL_PROVIDER_TYPES = ("onepassword",)
PROJECT_LIMIT_FIELDS = ("max_concurrent_sessions", "max_concurrent_invocations")
PROJECT_STATUSES = ("active", "archived")
# What a proxy's health check found (``status``; absent until it is checked).
PROXY_STATUSES = ("available", "unavailable")
# The ``status`` filter and the ``sort`` of ``GET /org/api_keys``.
API_KEY_STATUSES = ("active", "deleted", "all")
API_KEY_SORTS = ("created_at", "name", "expires_at")
