"""The alerts' forms: rules and channels (admins), acknowledgements and silences (operators)."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.conf import settings
from django.core.validators import validate_email

from console.alerts import kinds
from console.alerts.models import Alert, Channel, Rule
from console.service import targets

STATE_FILTERS = [
    ("active", "Pending and firing"),
    ("firing", "Firing"),
    ("pending", "Pending"),
    ("resolved", "Resolved"),
    ("all", "All"),
]
DURATIONS = [
    ("30", "30 minutes"),
    ("60", "1 hour"),
    ("240", "4 hours"),
    ("720", "12 hours"),
    ("1440", "1 day"),
    ("10080", "7 days"),
]
MIN_SECRET = 16


class FilterForm(forms.Form):
    state = forms.ChoiceField(choices=STATE_FILTERS, required=False)
    severity = forms.ChoiceField(choices=[("", "Any severity"), *kinds.SEVERITIES], required=False)
    rule = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    q = forms.CharField(required=False, max_length=200)

    def __init__(self, *args, rules=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["rule"].choices = [("", "Any rule"), *[(r.pk, r.name) for r in rules]]

    def values(self) -> dict:
        data = self.cleaned_data if self.is_valid() else {}
        return {
            "state": data.get("state") or "active",
            "severity": data.get("severity") or "",
            "rule": data.get("rule"),
            "q": (data.get("q") or "").strip(),
        }


class AckForm(forms.Form):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, auto_id="ack_%s", **kwargs)

    note = forms.CharField(
        max_length=500,
        required=True,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="What you are doing about it: the team sees it beside the alert.",
    )


class SilenceForm(forms.Form):
    SCOPES = [("subject", "This subject"), ("rule", "This rule"), ("all", "Every alert")]

    scope = forms.ChoiceField(choices=SCOPES, widget=forms.RadioSelect, initial="rule")
    rule = forms.TypedChoiceField(coerce=int, required=False, empty_value=None)
    subject_key = forms.CharField(required=False, max_length=300, widget=forms.HiddenInput)
    minutes = forms.TypedChoiceField(choices=DURATIONS, coerce=int, initial="60", label="For")
    note = forms.CharField(
        max_length=500, required=True, help_text="Why: a deploy, maintenance, a known issue."
    )

    def __init__(self, *args, rules=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.rules = {r.pk: r for r in rules}
        self.fields["rule"].choices = [("", "—"), *[(r.pk, r.name) for r in rules]]

    def clean(self):
        data = super().clean()
        scope = data.get("scope")
        if scope in ("rule", "subject") and data.get("rule") not in self.rules:
            self.add_error("rule", "Choose the rule to silence.")
        if scope == "subject" and not data.get("subject_key"):
            self.add_error("scope", "A subject is silenced from its alert's page.")
        return data

    def window(self) -> timedelta:
        return timedelta(minutes=self.cleaned_data["minutes"])


class RuleForm(forms.ModelForm):
    class Meta:
        model = Rule
        fields = [
            "name",
            "kind",
            "project_id",
            "severity",
            "threshold",
            "window_minutes",
            "for_seconds",
            "repeat_minutes",
            "channels",
            "enabled",
        ]
        widgets = {"channels": forms.CheckboxSelectMultiple}
        help_texts = {
            "project_id": "A project id; empty: the organization's default project.",
            "threshold": "What it counts depends on the kind (below); empty: the kind's default.",
            "window_minutes": "How far back the rule looks; empty: the kind's default.",
            "for_seconds": "How long the condition must hold before the alert fires (0: at once).",
            "repeat_minutes": "How often a firing, unacknowledged alert is said again (0: never).",
        }

    def __init__(self, *args, org=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["channels"].queryset = Channel.objects.filter(org=org)
        self.fields["kind"].choices = [(k, label) for k, label in kinds.CHOICES if k != kinds.SERVICE]
        if self.instance.pk and self.instance.builtin:
            # The built-in rule watches the service itself: its kind stays, and it stays on.
            self.fields["kind"].choices = kinds.CHOICES
            self.fields["kind"].disabled = True
            self.fields["enabled"].disabled = True
        for name in ("threshold", "window_minutes"):
            self.fields[name].widget.attrs.update({"min": 1, "max": 100000})
        self.fields["for_seconds"].widget.attrs.update({"max": 86400})
        self.fields["repeat_minutes"].widget.attrs.update({"max": 43200})

    def clean_project_id(self):
        value = (self.cleaned_data.get("project_id") or "").strip()
        if value and (len(value) > 100 or any(c in value for c in "/%?#") or not value.isprintable()):
            raise forms.ValidationError("A project id holds no slash, percent sign, ? or #.")
        return value

    def clean(self):
        data = super().clean()
        if data.get("for_seconds") is not None and data["for_seconds"] > 86400:
            self.add_error("for_seconds", "At most a day (86400 s).")
        if data.get("repeat_minutes") is not None and data["repeat_minutes"] > 43200:
            self.add_error("repeat_minutes", "At most 30 days (43200 min).")
        for name in ("threshold", "window_minutes"):
            if data.get(name) is not None and not 1 <= data[name] <= 100000:
                self.add_error(name, "Between 1 and 100000.")
        kind = data.get("kind")
        if kind == kinds.CAPACITY and data.get("threshold") and data["threshold"] > 1000:
            self.add_error("threshold", "A percentage: at most 1000.")
        return data


class ChannelForm(forms.ModelForm):
    url = forms.URLField(
        label="Webhook URL",
        max_length=500,
        required=False,
        assume_scheme="https",
        help_text="Where to POST. Checked like the service URL: no link-local or metadata addresses.",
    )
    secret = forms.CharField(
        required=False,
        max_length=200,
        widget=forms.PasswordInput(render_value=False),
        help_text=f"Signs each body (HMAC-SHA256). At least {MIN_SECRET} characters; write-only: empty keeps "
        "the one set.",
    )

    class Meta:
        model = Channel
        fields = ["name", "kind", "enabled", "addresses", "url", "format"]
        widgets = {"addresses": forms.Textarea(attrs={"rows": 3})}
        help_texts = {"addresses": "One address per line."}
        labels = {"format": "Body"}

    def __init__(self, *args, kind: str = Channel.Kind.WEBHOOK, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["kind"].choices = [(k, v) for k, v in Channel.Kind.choices if k != Channel.Kind.CONSOLE]
        # One kind per form (the page's "New e-mail channel" or "New webhook", or the channel's own kind).
        kind = self.instance.kind if self.instance.pk else kind
        self.fields["kind"].initial = kind
        self.fields["kind"].widget = forms.HiddenInput()
        if self.instance.pk:
            self.fields["kind"].disabled = True
        drop = ("url", "format", "secret") if kind == Channel.Kind.EMAIL else ("addresses",)
        for name in drop:
            del self.fields[name]

    def clean_addresses(self):
        text = self.cleaned_data.get("addresses") or ""
        addresses = [a.strip() for a in text.replace(",", "\n").splitlines() if a.strip()]
        if len(addresses) > 20:
            raise forms.ValidationError("At most 20 addresses.")
        for address in addresses:
            try:
                validate_email(address)
            except forms.ValidationError:
                raise forms.ValidationError(f"“{address[:100]}” is not an e-mail address.") from None
        return "\n".join(addresses)

    def clean(self):
        data = super().clean()
        kind = self.instance.kind if self.instance.pk else self.fields["kind"].initial
        data["kind"] = kind
        if kind == Channel.Kind.EMAIL and not data.get("addresses") and "addresses" not in self.errors:
            self.add_error("addresses", "At least one address.")
        if kind == Channel.Kind.WEBHOOK:
            url = data.get("url") or ""
            if not url and "url" not in self.errors:
                self.add_error("url", "Where the webhook is sent.")
            elif url:
                try:
                    targets.check_url(
                        url, allow_private=settings.ALERTS_WEBHOOK_ALLOW_PRIVATE, what="the webhook URL"
                    )
                except targets.ForbiddenTarget as exc:
                    self.add_error("url", exc.message[:1].upper() + exc.message[1:] + ".")
            secret = data.get("secret") or ""
            if secret and len(secret) < MIN_SECRET:
                self.add_error("secret", f"At least {MIN_SECRET} characters.")
            if not secret and not self.instance.secret_encrypted and "secret" not in self.errors:
                self.add_error("secret", "A secret the receiver checks the signature with.")
        return data


def alert_choices_label(alert: Alert) -> str:
    return f"{alert.rule.name}: {alert.subject_label}"
