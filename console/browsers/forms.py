"""Forms of the browser session pages, checked before anything is sent (notes §2)."""

from __future__ import annotations

import re

from django import forms

from console.service.contract import (
    CAPTURE_CATEGORIES,
    DEFAULT_VIEWPORT,
    VIEWPORT_PRESETS,
    preset_viewport,
)
from console.web.forms import CATEGORY_HELP, DEFAULT_TELEMETRY_CATEGORIES, http_url, viewport_label

NAME_MAX = 255
MAX_TAGS = 50
MIN_TIMEOUT, MAX_TIMEOUT = 10, 259_200
# Service field names → form fields, for the service's own 400 details.
FIELD_MAP = {"telemetry": "categories", "proxy_id": "proxy", "kiosk_mode": "kiosk_mode"}


def parse_tags(text: str) -> dict[str, str]:
    """``team=checkout`` per line (or comma-separated) → a dict; raises ValidationError with the line."""
    tags: dict[str, str] = {}
    for raw in re.split(r"[\n,]", text or ""):
        item = raw.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise forms.ValidationError(f"“{item}” is not key=value.")
        tags[key.strip()] = value.strip()
    if len(tags) > MAX_TAGS:
        raise forms.ValidationError(f"At most {MAX_TAGS} tags.")
    return tags


def tags_text(tags: dict[str, str] | None) -> str:
    return "\n".join(f"{k}={v}" for k, v in (tags or {}).items())


class SessionForm(forms.Form):
    name = forms.CharField(
        max_length=NAME_MAX,
        required=False,
        help_text="Unique among active sessions of the project; optional.",
    )
    tags = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "team=checkout\nenv=prod"}),
        help_text="key=value, one per line. Lists filter on these.",
    )
    headless = forms.BooleanField(required=False, help_text="No live view and no VNC; cheaper and faster.")
    stealth = forms.BooleanField(
        required=False, help_text="CAPTCHA solver, and the stealth proxy when no proxy is chosen."
    )
    kiosk_mode = forms.BooleanField(
        required=False, label="Kiosk mode", help_text="Hide the address bar and tabs in live view."
    )
    viewport = forms.ChoiceField(
        choices=[(v, viewport_label(v)) for v in VIEWPORT_PRESETS], initial=DEFAULT_VIEWPORT
    )
    memory = forms.ChoiceField(
        required=False,
        choices=[("", "Default (8 GiB)"), ("8GiB", "8 GiB"), ("16GiB", "16 GiB")],
        help_text="Headful browsers only.",
    )
    region = forms.ChoiceField(choices=[("us-east", "US East"), ("eu-west", "EU West")])
    timeout_seconds = forms.IntegerField(
        label="Inactivity timeout (seconds)",
        min_value=MIN_TIMEOUT,
        max_value=MAX_TIMEOUT,
        initial=60,
        help_text="The session ends after this long without CDP or live-view activity (10 s to 72 h).",
    )
    profile = forms.ChoiceField(
        required=False, help_text="Saved cookies and storage to load; none for a clean browser."
    )
    profile_save_changes = forms.BooleanField(
        required=False, label="Save changes to the profile when the session ends"
    )
    proxy = forms.ChoiceField(required=False, help_text="Only egress changes; stealth stays as chosen.")
    extensions = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    start_url = forms.CharField(
        required=False, label="Start URL", help_text="Opened once the browser is up (best effort)."
    )
    categories = forms.MultipleChoiceField(
        required=False,
        label="Telemetry",
        choices=[(c, f"{c} — {CATEGORY_HELP[c]}") for c in CAPTURE_CATEGORIES],
        widget=forms.CheckboxSelectMultiple,
        initial=list(DEFAULT_TELEMETRY_CATEGORIES),
        help_text="Nothing checked: no telemetry is captured.",
    )

    def __init__(self, *args, profiles=(), proxies=(), extensions=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["profile"].choices = [("", "None")] + [(p.id, p.name or p.id) for p in profiles]
        self.fields["proxy"].choices = [
            ("", "None (stealth default when stealth is on)"),
            ("mode:direct", "Direct (no proxy)"),
            ("mode:default", "Default stealth proxy"),
            *[(f"id:{p.id}", f"{p.name or p.id} ({p.type})") for p in proxies],
        ]
        self.fields["extensions"].choices = [(e.id, e.name or e.id) for e in extensions]

    def clean_tags(self) -> dict[str, str]:
        return parse_tags(self.cleaned_data.get("tags", ""))

    def clean_start_url(self) -> str:
        value = self.cleaned_data.get("start_url", "").strip()
        if value:
            http_url(value)
        return value

    def clean(self):
        data = super().clean()
        if data.get("headless") and data.get("memory"):
            self.add_error("memory", "Memory can only be chosen for headful browsers.")
        if data.get("profile_save_changes") and not data.get("profile"):
            self.add_error("profile_save_changes", "Choose a profile to save changes to.")
        return data

    def body(self) -> dict:
        """The create body of notes §2 from the cleaned data (defaults left to the service)."""
        data = self.cleaned_data
        body: dict = {
            "headless": data["headless"],
            "stealth": data["stealth"],
            "kiosk_mode": data["kiosk_mode"],
            "region": data["region"],
            "timeout_seconds": data["timeout_seconds"],
            "viewport": preset_viewport(data["viewport"]),
        }
        if data["name"]:
            body["name"] = data["name"].strip()
        if data["tags"]:
            body["tags"] = data["tags"]
        if data["memory"]:
            body["memory"] = data["memory"]
        if data["profile"]:
            body["profile"] = {"id": data["profile"], "save_changes": data["profile_save_changes"]}
        proxy = data.get("proxy") or ""
        if proxy.startswith("mode:"):
            body["proxy"] = {"mode": proxy[5:]}
        elif proxy.startswith("id:"):
            body["proxy"] = {"id": proxy[3:]}
        if data["extensions"]:
            body["extensions"] = [{"id": e} for e in data["extensions"]]
        if data["start_url"]:
            body["start_url"] = data["start_url"]
        chosen = set(data["categories"])
        if chosen:
            body["telemetry"] = {
                "enabled": True,
                "browser": {c: {"enabled": c in chosen} for c in CAPTURE_CATEGORIES},
            }
        return body
