"""Forms of the auth connection pages, and the form of one paused login flow (``StepForm``).

``StepForm`` is deliberately not a Django form: what a login flow asks changes at every step, and the
values typed into it must never be rendered back. It describes the inputs to draw (with the site's or
our own error next to each) and turns a POST into exactly one submit action.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django import forms

from console.service.auth_connections import AuthConnection, Input, Option

MAX_INTERVAL = 86400
UNITS = {"seconds": 1, "minutes": 60, "hours": 3600}
UNIT_CHOICES = [("minutes", "minutes"), ("hours", "hours"), ("seconds", "seconds")]
DOMAIN = re.compile(
    r"^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$"
)
PROFILE_NAME = re.compile(r"^[A-Za-z0-9._-]{1,255}$")
# The service's field names → this module's form fields (for the service's own 400 details).
SERVICE_FIELDS = {
    "credential": "credential_name",
    "credential.name": "credential_name",
    "credential.provider": "credential_item",
    "credential.path": "credential_item",
    "browser": "proxy",
    "browser.proxy": "proxy",
    "allowed_domains": "allowed_domains",
}


def split_interval(seconds: int | None) -> tuple[int | None, str]:
    """The largest unit that shows ``seconds`` exactly: 3600 → (1, "hours")."""
    if not seconds:
        return None, "hours"
    for unit in ("hours", "minutes"):
        if seconds % UNITS[unit] == 0:
            return seconds // UNITS[unit], unit
    return seconds, "seconds"


def describe_interval(seconds: int | None) -> str:
    if not seconds:
        return "—"
    value, unit = split_interval(seconds)
    if value == 1:
        unit = unit[:-1]
    return f"{value} {unit}"


def _clean_domain(value: str, field: str = "domain") -> str:
    value = value.strip().lower().rstrip(".")
    if "://" in value or "/" in value or ":" in value:
        raise forms.ValidationError(
            f"Give the bare host name, such as app.example.com (no https://, path or port) in {field}."
        )
    if not DOMAIN.match(value):
        raise forms.ValidationError(
            "Not a host name: use letters, digits, dots and hyphens, like app.example.com."
        )
    return value


class IntervalFields(forms.Form):
    """``health_check_interval`` as a number and a unit, checked against the plan's floor."""

    health_checks = forms.BooleanField(
        required=False,
        initial=True,
        label="Health checks",
        help_text="Check regularly that the profile is still logged in.",
    )
    health_check_interval = forms.IntegerField(min_value=1, initial=1, label="Check every")
    interval_unit = forms.ChoiceField(choices=UNIT_CHOICES, initial="hours", label="Unit")
    auto_reauth = forms.BooleanField(
        required=False,
        initial=True,
        label="Re-authenticate automatically",
        help_text="When a check finds the session expired and the stored credential can log in alone.",
    )

    def __init__(self, *args, floor: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.floor = floor

    def clean(self):
        cleaned = super().clean()
        value, unit = cleaned.get("health_check_interval"), cleaned.get("interval_unit")
        if value is None or unit is None:
            return cleaned
        seconds = value * UNITS[unit]
        if self.floor and seconds < self.floor and self.enforces_floor(seconds):
            self.add_error(
                "health_check_interval",
                f"Your plan checks at most every {describe_interval(self.floor)} ({self.floor} seconds).",
            )
        elif seconds > MAX_INTERVAL:
            self.add_error("health_check_interval", "At most 24 hours (86400 seconds).")
        cleaned["interval_seconds"] = seconds
        return cleaned

    def enforces_floor(self, seconds: int) -> bool:
        return True


class ConnectionForm(IntervalFields):
    domain = forms.CharField(max_length=253, help_text="The site to keep logged in, such as app.example.com.")
    profile_name = forms.CharField(
        max_length=255,
        label="Profile",
        help_text="The browser profile that keeps the session. A profile that does not exist is created.",
    )
    login_url = forms.URLField(
        required=False,
        assume_scheme="https",
        label="Login URL",
        help_text="Optional: start here instead of discovering the login page.",
    )
    allowed_domains = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Allowed domains",
        help_text="Other domains the login may pass through, one per line. Common identity providers "
        "(Google, Microsoft, Okta, …) are allowed anyway.",
    )
    credential_name = forms.CharField(
        required=False,
        max_length=255,
        label="Credential",
        help_text="A credential of the vault, by name, to log in and re-authenticate with.",
        # The names come from a <datalist> of that id in templates/auth/new.html.
        widget=forms.TextInput(attrs={"list": "auth-credential-names", "autocomplete": "off"}),
    )
    credential_item = forms.CharField(
        required=False,
        max_length=600,
        label="Or an item of a credential provider",
        help_text="Search your providers' items (1Password), or type provider::Vault/Item.",
    )
    save_credentials = forms.BooleanField(
        required=False,
        initial=True,
        label="Save credentials",
        help_text="Keep the values typed during a successful login (one-time codes are never kept).",
    )
    record_session = forms.BooleanField(
        required=False, initial=False, label="Record login sessions", help_text="Keep a replay of each login."
    )
    proxy = forms.CharField(
        required=False,
        label="Proxy",
        help_text="Empty or “default” for the stealth proxy, “direct” for none, or a proxy's name or id.",
    )

    field_order = [
        "domain",
        "profile_name",
        "login_url",
        "allowed_domains",
        "credential_name",
        "credential_item",
        "save_credentials",
        "health_checks",
        "health_check_interval",
        "interval_unit",
        "auto_reauth",
        "record_session",
        "proxy",
    ]

    def clean_domain(self):
        return _clean_domain(self.cleaned_data["domain"])

    def clean_profile_name(self):
        value = self.cleaned_data["profile_name"].strip()
        if not PROFILE_NAME.match(value):
            raise forms.ValidationError("Use letters, digits, dots, underscores and hyphens only.")
        return value

    def clean_allowed_domains(self):
        items = [d for d in re.split(r"[\s,]+", self.cleaned_data["allowed_domains"]) if d]
        return list(dict.fromkeys(_clean_domain(d, "allowed domains") for d in items))

    def clean_credential_item(self) -> tuple[str, str] | None:
        value = self.cleaned_data["credential_item"].strip()
        if not value:
            return None
        provider, sep, path = value.partition("::")
        if not sep or not provider.strip() or "/" not in path.strip("/"):
            raise forms.ValidationError("Pick an item from the list, or write provider::Vault/Item.")
        return provider.strip(), path.strip()

    def clean(self):
        cleaned = super().clean()
        if (cleaned.get("credential_name") or "").strip() and cleaned.get("credential_item"):
            self.add_error("credential_item", "Choose a credential or a provider item, not both.")
        return cleaned

    def _credential(self) -> dict | None:
        data = self.cleaned_data
        if data.get("credential_item"):
            provider, path = data["credential_item"]
            return {"provider": provider, "path": path}
        name = data["credential_name"].strip()
        return {"name": name} if name else None

    def payload(self) -> dict:
        data = self.cleaned_data
        proxy = data["proxy"].strip()
        browser = None
        if proxy.lower() in ("direct", "default"):
            browser = {"proxy": {"mode": proxy.lower()}}
        elif proxy:
            browser = {"proxy": {"id": proxy} if proxy.startswith("proxy_") else {"name": proxy}}
        return {
            "domain": data["domain"],
            "profile_name": data["profile_name"],
            "login_url": data["login_url"] or None,
            "allowed_domains": data["allowed_domains"] or None,
            "credential": self._credential(),
            "save_credentials": data["save_credentials"],
            "health_checks": data["health_checks"],
            "health_check_interval": data["interval_seconds"],
            "auto_reauth": data["auto_reauth"],
            "record_session": data["record_session"],
            "browser": browser,
        }


class HealthForm(IntervalFields):
    """The health settings of an existing connection; ``changes()`` holds only what was changed."""

    def __init__(self, *args, connection: AuthConnection, **kwargs):
        value, unit = split_interval(connection.health_check_interval)
        initial = {
            "health_checks": bool(connection.health_checks),
            "health_check_interval": value,
            "interval_unit": unit,
            "auto_reauth": bool(connection.auto_reauth),
        }
        super().__init__(*args, initial=initial, **kwargs)
        self.connection = connection

    def enforces_floor(self, seconds: int) -> bool:
        # A connection below today's floor is grandfathered until its interval is edited (notes §1).
        return seconds != self.connection.health_check_interval

    def changes(self) -> dict:
        data, connection = self.cleaned_data, self.connection
        changes = {}
        if data["health_checks"] != bool(connection.health_checks):
            changes["health_checks"] = data["health_checks"]
        if data["interval_seconds"] != connection.health_check_interval:
            changes["health_check_interval"] = data["interval_seconds"]
        if data["auto_reauth"] != bool(connection.auto_reauth):
            changes["auto_reauth"] = data["auto_reauth"]
        return changes


# The login flow ----------------------------------------------------------------------------------

# How each input type is drawn: (HTML type, autocomplete, inputmode).
INPUT_TYPES = {
    "identifier": ("text", "username", None),
    "password": ("password", "current-password", None),
    "code": ("text", "one-time-code", "numeric"),
    "totp_code": ("text", "one-time-code", "numeric"),
    "totp_secret": ("password", "off", None),
    "text": ("text", "off", None),
}


@dataclass
class InputView:
    input: Input
    error: str = ""

    @property
    def name(self) -> str:
        return f"v_{self.input.key}"

    @property
    def dom_id(self) -> str:
        return "flow-" + re.sub(r"[^A-Za-z0-9_-]", "-", self.input.key)

    @property
    def html_type(self) -> str:
        return INPUT_TYPES.get(self.input.type, INPUT_TYPES["text"])[0]

    @property
    def autocomplete(self) -> str:
        return INPUT_TYPES.get(self.input.type, INPUT_TYPES["text"])[1]

    @property
    def inputmode(self) -> str | None:
        return INPUT_TYPES.get(self.input.type, INPUT_TYPES["text"])[2]


class StepForm:
    """What a paused flow asks, with errors; ``action()`` reads a POST into one submit action."""

    def __init__(self, flow, data=None):
        self.flow = flow
        self.data = data
        self.error = ""
        self.inputs = [InputView(i) for i in flow.inputs]
        self.options: list[Option] = flow.options
        rejected = [view for view in self.inputs if view.input.rejected]
        if flow.website_error:
            for view in rejected:
                view.error = flow.website_error
            if not rejected:
                self.error = flow.website_error

    @property
    def interaction_id(self) -> str:
        return self.flow.interaction_id or ""

    def action(self) -> tuple[str, object] | None:
        """("choice", Option) or ("fields", {key: value}); None (with errors set) when it is not valid."""
        data = self.data
        picked = data.get("choice", "")
        if picked:
            action, _, value = picked.partition(":")
            option = next((o for o in self.options if o.action == action and o.value == value), None)
            if option is None:
                self.error = "That option is no longer offered: choose one of those shown."
                return None
            return ("choice", option)
        if not self.inputs:
            self.error = "Choose one of the options."
            return None
        values = {}
        for view in self.inputs:
            view.error = ""
            raw = data.get(view.name, "")
            value = raw if view.input.type in ("password", "totp_secret") else raw.strip()
            if view.input.type in ("code", "totp_code"):
                value = re.sub(r"[\s-]", "", value)
                if value and not value.isdigit():
                    view.error = "Enter the code's digits only."
            if not value and view.input.required:
                view.error = f"Enter {view.input.label.lower()}." if view.input.label else "Required."
            if value:
                values[view.input.key] = value
        self.error = ""
        if any(view.error for view in self.inputs):
            return None
        return ("fields", values)

    def field_names(self, values: dict) -> str:
        """For the audit log: which fields were answered, never what with."""
        return ", ".join(values) or "none"

    def add_service_errors(self, field_errors: dict[str, list[str]]) -> None:
        by_key = {view.input.key: view for view in self.inputs}
        for name, messages in field_errors.items():
            key = name.split(".", 1)[1] if name.startswith(("field_values.", "fields.")) else None
            if key in by_key:
                by_key[key].error = " ".join(messages)
            else:
                self.error = " ".join(messages)
