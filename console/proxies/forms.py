"""Forms of the proxies pages: each proxy type takes only its own fields, checked before sending."""

from __future__ import annotations

import ipaddress
import re

from django import forms

from console.service.contract import PROXY_CONFIG_FIELDS, PROXY_OS, PROXY_PROTOCOLS, PROXY_TYPES
from console.web.forms import NameField, WriteOnlyTextarea, public_url

TYPE_LABELS = {
    "datacenter": "Datacenter",
    "isp": "ISP",
    "residential": "Residential",
    "mobile": "Mobile",
    "custom": "Custom",
}
OS_LABELS = {"windows": "Windows", "macos": "macOS", "android": "Android"}
# The create form's first tab (the service no longer accepts datacenter).
DEFAULT_TYPE = "isp"
TYPE_HELP = {
    "isp": "Stable exit IPs registered to consumer ISPs: datacenter speed, better reputation.",
    "residential": "Exit through real home connections; the node changes from session to session.",
    "mobile": "Exit through mobile carriers; the hardest to block, the node changes often.",
    "custom": "Your own proxy server: host, port and optional credentials.",
}
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9-]{1,63})*$")
_COUNTRY = re.compile(r"^[A-Za-z]{2}$")
_STATE = re.compile(r"^[A-Za-z]{2}$")
_ZIP = re.compile(r"^\d{5}$")
_ASN = re.compile(r"^(AS)?\d{1,10}$", re.IGNORECASE)


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _host_ok(value: str) -> bool:
    return _is_ip(value) or bool(_HOSTNAME.match(value))


class ProxyForm(forms.Form):
    """Create a proxy of one type; the fields of other types are removed, so they can't be sent."""

    name = forms.CharField(max_length=255, required=False, help_text="Names need not be unique.")
    protocol = forms.ChoiceField(
        choices=[(protocol, protocol.upper()) for protocol in PROXY_PROTOCOLS],
        initial="https",
        help_text="How browsers talk to the proxy.",
    )
    bypass_hosts = forms.CharField(
        required=False,
        label="Bypass hosts",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "*.internal.example.com\nstatus.example.com"}),
        help_text="One host per line (*. matches subdomains): these go direct, not through the proxy.",
    )
    country = forms.CharField(
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "US", "size": 4}),
        help_text="ISO 3166 two-letter code; US when empty.",
    )
    city = forms.CharField(required=False, max_length=100)
    state = forms.CharField(required=False, widget=forms.TextInput(attrs={"size": 4}))
    zip = forms.CharField(required=False, label="ZIP code", widget=forms.TextInput(attrs={"size": 6}))
    asn = forms.CharField(
        required=False, max_length=12, label="ASN", help_text="An AS number such as AS7922."
    )
    os = forms.ChoiceField(
        required=False,
        label="Operating system",
        choices=[("", "Any"), *((os, OS_LABELS[os]) for os in PROXY_OS)],
    )
    host = forms.CharField(max_length=253)
    port = forms.IntegerField(
        min_value=1,
        max_value=65535,
        error_messages={"min_value": "A port is 1 to 65535.", "max_value": "A port is 1 to 65535."},
    )
    username = forms.CharField(required=False, max_length=255)
    # Write-only: never rendered back, not even after a validation error.
    password = forms.CharField(
        required=False,
        max_length=1024,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Stored by the service and never shown again.",
    )
    ca_bundle = forms.CharField(
        required=False,
        label="CA bundle (PEM)",
        widget=WriteOnlyTextarea(attrs={"rows": 4, "placeholder": "-----BEGIN CERTIFICATE-----"}),
        help_text="Only for proxies that intercept TLS; stored by the service and never shown again "
        "(after an error elsewhere in the form, paste it again).",
    )

    def __init__(self, *args, kind: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.kind = kind
        keep = {"name", "protocol", "bypass_hosts", *PROXY_CONFIG_FIELDS[kind]}
        for field in list(self.fields):
            if field not in keep:
                del self.fields[field]
        if kind == "residential":
            self.fields["city"].help_text = "No spaces (new_york); needs a country."
            self.fields["state"].help_text = "Two letters, e.g. NY."
            self.fields["zip"].help_text = "US only."
        if kind == "mobile":
            self.fields["state"].help_text = "US only, two letters."
            self.fields["city"].help_text = "The provider's city alias."
        if kind == "custom":
            self.fields["protocol"].initial = "http"

    def clean_bypass_hosts(self) -> list[str]:
        hosts = [
            h.strip().lower() for h in re.split(r"[\s,]+", self.cleaned_data["bypass_hosts"]) if h.strip()
        ]
        bad = [h for h in hosts if not _host_ok(h.removeprefix("*."))]
        if bad:
            raise forms.ValidationError(f"Not a host name: {bad[0]}")
        return hosts

    def clean_country(self) -> str:
        value = self.cleaned_data["country"].strip().upper()
        if value and not _COUNTRY.match(value):
            raise forms.ValidationError("Use a two-letter country code such as US or DE.")
        return value

    def clean_city(self) -> str:
        value = self.cleaned_data["city"].strip()
        if self.kind == "residential" and " " in value:
            raise forms.ValidationError("No spaces: write the city like new_york.")
        return value

    def clean_state(self) -> str:
        value = self.cleaned_data["state"].strip().upper()
        if value and not _STATE.match(value):
            raise forms.ValidationError("Use a two-letter state code such as NY.")
        return value

    def clean_zip(self) -> str:
        value = self.cleaned_data["zip"].strip()
        if value and not _ZIP.match(value):
            raise forms.ValidationError("A US ZIP code has 5 digits.")
        return value

    def clean_asn(self) -> str:
        value = self.cleaned_data["asn"].strip()
        if value and not _ASN.match(value):
            raise forms.ValidationError("An AS number looks like AS7922.")
        return value

    def clean_host(self) -> str:
        value = self.cleaned_data["host"].strip()
        if not _host_ok(value):
            raise forms.ValidationError("Enter a host name or an IP address (no scheme, no port).")
        return value

    def clean_ca_bundle(self) -> str:
        value = self.cleaned_data["ca_bundle"].strip()
        if value and "-----BEGIN CERTIFICATE-----" not in value:
            raise forms.ValidationError("Paste PEM certificates (-----BEGIN CERTIFICATE----- blocks).")
        return value

    def clean(self):
        cleaned = super().clean()
        country = cleaned.get("country") or "US"
        if self.kind == "residential":
            if cleaned.get("city") and not cleaned.get("country") and "city" not in self.errors:
                self.add_error("country", "A city needs a country.")
            if cleaned.get("zip") and country != "US":
                self.add_error("zip", "ZIP targeting is for US proxies only.")
        if self.kind == "mobile" and cleaned.get("state") and country != "US":
            self.add_error("state", "State targeting is for US mobile proxies only.")
        return cleaned

    def config(self) -> dict:
        """The ``config`` object of the create body: only this type's fields, empty ones left out."""
        config = {}
        for field in PROXY_CONFIG_FIELDS[self.kind]:
            value = self.cleaned_data.get(field)
            if value not in (None, ""):
                config[field] = value
        if "asn" in config and not config["asn"].upper().startswith("AS"):
            config["asn"] = f"AS{config['asn']}"
        return config


# The service's field names → this form's fields.
FIELD_MAP = {f"config.{field}": field for fields in PROXY_CONFIG_FIELDS.values() for field in fields}


class RenameForm(forms.Form):
    name = NameField(label="Name", help_text="Names need not be unique.")


class CheckForm(forms.Form):
    url = forms.CharField(
        required=False,
        max_length=2048,
        label="Target URL (optional)",
        widget=forms.URLInput(attrs={"placeholder": "https://www.example.com/login"}),
    )

    def clean_url(self) -> str:
        value = self.cleaned_data["url"].strip()
        if not value:
            return ""
        public_url(value, "the service only tests public targets")
        return value


def type_choices() -> list[tuple[str, str, str]]:
    return [(kind, TYPE_LABELS[kind], TYPE_HELP[kind]) for kind in PROXY_TYPES]
