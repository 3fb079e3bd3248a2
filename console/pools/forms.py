"""Forms of the pools pages: the whole pool configuration, validated before anything is sent."""

from __future__ import annotations

import json

from django import forms

from console.service.contract import (
    BLOCKED_POLICIES,
    CAPTURE_CATEGORIES,
    DEFAULT_VIEWPORT,
    VIEWPORT_PRESETS,
    preset_viewport,
)
from console.web.forms import (
    CATEGORY_HELP,
    DEFAULT_TELEMETRY_CATEGORIES,
    http_url,
    parse_json,
    viewport_label,
)

MAX_SIZE = 500
MAX_POLICY_BYTES = 5 * 1024 * 1024
# The fields of the PATCH body that each form field feeds.
WIRE_FIELDS = {
    "size": "size",
    "name": "name",
    "fill_rate_per_minute": "fill_rate_per_minute",
    "timeout_seconds": "timeout_seconds",
    "stealth": "stealth",
    "headless": "headless",
    "kiosk_mode": "kiosk_mode",
    "profile": "profile",
    "refresh_on_profile_update": "refresh_on_profile_update",
    "extensions": "extensions",
    "proxy_id": "proxy_id",
    "viewport": "viewport",
    "viewport_width": "viewport",
    "viewport_height": "viewport",
    "viewport_refresh_rate": "viewport",
    "chrome_policy": "chrome_policy",
    "start_url": "start_url",
    "telemetry_enabled": "telemetry",
    **{f"telemetry_{c}": "telemetry" for c in CAPTURE_CATEGORIES},
}


def _int_field(label: str, low: int, high: int, *, required: bool = False, help_text: str = ""):
    return forms.IntegerField(
        label=label,
        required=required,
        min_value=low,
        max_value=high,
        help_text=help_text,
        error_messages={
            "required": f"{label} is required.",
            "invalid": "Enter a whole number.",
            "min_value": f"At least {low}.",
            "max_value": f"At most {high:,}.",
        },
        widget=forms.NumberInput(attrs={"min": low, "max": high, "inputmode": "numeric"}),
    )


class PoolForm(forms.Form):
    """Create (every field) or edit (only what changed is sent: PATCH semantics)."""

    name = forms.CharField(
        max_length=255,
        required=False,
        label="Name",
        help_text="Unique in the project. Once set, it can be changed but not cleared.",
    )
    size = _int_field(
        "Size", 1, MAX_SIZE, required=True, help_text="Browsers the pool keeps (idle + leased)."
    )
    fill_rate_per_minute = _int_field(
        "Fill rate", 1, 100, help_text="Percent of the size warmed per minute (default 25)."
    )
    timeout_seconds = _int_field(
        "Timeout", 10, 259_200, help_text="Seconds of inactivity before a leased browser ends (default 600)."
    )
    stealth = forms.BooleanField(required=False, label="Stealth (CAPTCHA solver, default stealth proxy)")
    headless = forms.BooleanField(required=False, label="Headless (no live view)")
    kiosk_mode = forms.BooleanField(required=False, label="Kiosk mode (hide address bar and tabs)")
    profile = forms.ChoiceField(required=False, label="Profile")
    refresh_on_profile_update = forms.BooleanField(
        required=False,
        initial=True,
        label="Refresh idle browsers when the profile is updated",
    )
    extensions = forms.MultipleChoiceField(
        required=False, label="Extensions", widget=forms.CheckboxSelectMultiple
    )
    proxy_id = forms.ChoiceField(required=False, label="Proxy")
    viewport = forms.ChoiceField(required=False, label="Viewport")
    viewport_width = _int_field("Width", 320, 7680)
    viewport_height = _int_field("Height", 240, 4320)
    viewport_refresh_rate = _int_field("Refresh rate (Hz)", 1, 240)
    chrome_policy = forms.CharField(
        required=False,
        label="Chrome policy (JSON)",
        widget=forms.Textarea(attrs={"rows": 5, "spellcheck": "false", "class": "mono"}),
        help_text='Chrome enterprise policies as a JSON object, e.g. {"BlockThirdPartyCookies": true}.',
    )
    start_url = forms.CharField(required=False, label="Start URL", max_length=2048)
    telemetry_enabled = forms.BooleanField(required=False, initial=True, label="Capture telemetry")
    discard_all_idle = forms.BooleanField(
        required=False,
        label="Discard idle browsers now, so every browser handed out from now on has the new configuration",
    )

    def __init__(self, *args, profiles=(), extensions=(), proxies=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["profile"].choices = [("", "No profile")] + [(p.id, p.label) for p in profiles]
        self.fields["extensions"].choices = [(e.id, e.label) for e in extensions]
        self.fields["proxy_id"].choices = [("", "No proxy (direct, or the stealth default)")] + [
            (p.id, f"{p.name or p.id} ({p.type})") for p in proxies
        ]
        self.fields["viewport"].choices = [
            ("", f"Service default ({viewport_label(DEFAULT_VIEWPORT)})"),
            *((v, viewport_label(v)) for v in VIEWPORT_PRESETS),
            ("custom", "Custom…"),
        ]
        for category in CAPTURE_CATEGORIES:
            self.fields[f"telemetry_{category}"] = forms.BooleanField(
                required=False,
                initial=category in DEFAULT_TELEMETRY_CATEGORIES,
                label=category,
                help_text=CATEGORY_HELP[category],
            )

    # --- cleaning -------------------------------------------------------------------------------

    def clean_name(self):
        value = self.cleaned_data["name"].strip()
        if "/" in value or "%" in value:
            raise forms.ValidationError("A pool name cannot contain / or %.")
        return value

    def clean_start_url(self):
        value = self.cleaned_data["start_url"].strip()
        if value:
            http_url(value)
        return value

    def clean_chrome_policy(self):
        raw = self.cleaned_data["chrome_policy"].strip()
        if not raw:
            return {}
        if len(raw.encode()) > MAX_POLICY_BYTES:
            raise forms.ValidationError("The policy can be at most 5 MiB.")
        value = parse_json(raw)
        if not isinstance(value, dict):
            raise forms.ValidationError("Give a JSON object of policy names to values.")
        blocked = [name for name in value if name in BLOCKED_POLICIES]
        if blocked:
            raise forms.ValidationError(
                f"Managed by the service and refused: {', '.join(blocked)}. Use the pool's extensions "
                "and proxy settings instead."
            )
        return value

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("viewport") == "custom":
            for name in ("viewport_width", "viewport_height"):
                if cleaned.get(name) is None and name not in self.errors:
                    self.add_error(name, "Required for a custom viewport.")
        return cleaned

    # --- the wire shape -------------------------------------------------------------------------

    def _viewport(self) -> dict:
        choice = self.cleaned_data.get("viewport")
        if not choice:
            return {}
        if choice == "custom":
            shape = {
                "width": self.cleaned_data["viewport_width"],
                "height": self.cleaned_data["viewport_height"],
            }
            if self.cleaned_data.get("viewport_refresh_rate"):
                shape["refresh_rate"] = self.cleaned_data["viewport_refresh_rate"]
            return shape
        return preset_viewport(choice)

    def _telemetry(self) -> dict:
        if not self.cleaned_data.get("telemetry_enabled"):
            return {"enabled": False}
        return {
            "enabled": True,
            "browser": {
                c: {"enabled": bool(self.cleaned_data.get(f"telemetry_{c}"))} for c in CAPTURE_CATEGORIES
            },
        }

    def wire(self, name: str):
        """The service's value for one configuration field."""
        data = self.cleaned_data
        if name == "profile":
            return {"id": data["profile"]}  # {"id": ""} clears it on update
        if name == "extensions":
            return [{"id": i} for i in data["extensions"]]
        if name == "viewport":
            return self._viewport()
        if name == "telemetry":
            return self._telemetry()
        return data[name]

    def create_body(self) -> dict:
        """Everything set, without empty optional fields (the service applies its defaults)."""
        data = self.cleaned_data
        body: dict = {"size": data["size"]}
        for name in ("name", "start_url", "proxy_id"):
            if data.get(name):
                body[name] = data[name]
        for name in ("fill_rate_per_minute", "timeout_seconds"):
            if data.get(name) is not None:
                body[name] = data[name]
        for name in ("stealth", "headless", "kiosk_mode"):
            body[name] = bool(data.get(name))
        if data.get("profile"):
            body["profile"] = {"id": data["profile"]}
            body["refresh_on_profile_update"] = bool(data.get("refresh_on_profile_update"))
        for name in ("extensions", "viewport", "chrome_policy"):
            value = self.wire(name) if name != "chrome_policy" else data.get("chrome_policy")
            if value:
                body[name] = value
        body["telemetry"] = self._telemetry()
        return body

    def update_body(self) -> dict:
        """Only the fields the admin changed (PATCH: ``""``, ``[]`` and ``{}`` clear a field)."""
        wire_names = []
        for field in self.changed_data:
            wire_name = WIRE_FIELDS.get(field)
            if wire_name and wire_name not in wire_names:
                wire_names.append(wire_name)
        body = {}
        for name in wire_names:
            if name == "name" and not self.cleaned_data["name"]:
                continue  # a name cannot be cleared ("" is a no-op)
            if name in ("fill_rate_per_minute", "timeout_seconds") and self.cleaned_data[name] is None:
                continue  # emptied: keep the current value rather than guess the default
            value = self.wire(name)
            if name == "viewport" and not value:
                continue  # the service has no "back to default" for a viewport; leave it
            body[name] = value
        if body.get("profile", {}).get("id"):
            # Say what the checkbox shows; otherwise the service would turn refresh on by default.
            body["refresh_on_profile_update"] = bool(self.cleaned_data.get("refresh_on_profile_update"))
        return body

    # --- template helpers -----------------------------------------------------------------------

    def telemetry_fields(self):
        return [self[f"telemetry_{c}"] for c in CAPTURE_CATEGORIES]


def initial_from(pool) -> dict:
    """The edit form's starting values from a pool record."""
    config = pool.config
    viewport = config.viewport
    preset = ""
    if viewport and viewport.width:
        key = f"{viewport.width}x{viewport.height}@{viewport.refresh_rate}"
        preset = key if key in VIEWPORT_PRESETS else "custom"
    telemetry = config.telemetry or {}
    categories = config.telemetry_categories
    return {
        "name": pool.name or "",
        "size": config.size,
        "fill_rate_per_minute": config.fill_rate_per_minute,
        "timeout_seconds": config.timeout_seconds,
        "stealth": config.stealth,
        "headless": config.headless,
        "kiosk_mode": config.kiosk_mode,
        "profile": pool.profile_id or (config.profile.id if config.profile else "") or "",
        "refresh_on_profile_update": config.refresh_on_profile_update,
        "extensions": list(pool.extension_ids or [e.id for e in config.extensions]),
        "proxy_id": config.proxy_id or "",
        "viewport": preset,
        "viewport_width": viewport.width if viewport else None,
        "viewport_height": viewport.height if viewport else None,
        "viewport_refresh_rate": viewport.refresh_rate if viewport else None,
        "chrome_policy": json.dumps(config.chrome_policy, indent=2) if config.chrome_policy else "",
        "start_url": config.start_url or "",
        "telemetry_enabled": bool(telemetry.get("enabled", any(categories.values()))),
        **{f"telemetry_{c}": on for c, on in categories.items()},
    }


class AcquireForm(forms.Form):
    timeout_seconds = _int_field(
        "Wait up to (seconds)", 0, 60, help_text="How long to wait for a free browser before giving up."
    )
    name = forms.CharField(required=False, max_length=255, label="Session name")
    start_url = forms.CharField(required=False, max_length=2048, label="Start URL for this lease")

    clean_start_url = PoolForm.clean_start_url


class ReleaseForm(forms.Form):
    session_id = forms.CharField(max_length=200, label="Session id")
    reuse = forms.BooleanField(
        required=False, initial=True, label="Reuse the browser (return it to the pool)"
    )

    def clean_session_id(self):
        value = self.cleaned_data["session_id"].strip()
        if not value:
            raise forms.ValidationError("Give the session id to release.")
        return value


class DeleteForm(forms.Form):
    force = forms.BooleanField(required=False, label="Terminate the leased browsers and delete anyway")
