"""Forms of the projects pages: validated here, so bad input never reaches the service."""

from __future__ import annotations

from django import forms

from console.web.forms import path_name

MAX_CAP = 100_000
LIMIT_LABELS = {
    "max_concurrent_sessions": "Concurrent browser sessions",
    "max_concurrent_invocations": "Concurrent invocations",
}


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=255, label="Project name")

    def clean_name(self):
        return path_name(self.cleaned_data["name"], "project")


class LimitsForm(forms.Form):
    """One choice per cap: leave it, set it to N, or remove it (sends 0); only changed caps are sent."""

    MODES = [
        ("keep", "Leave unchanged"),
        ("cap", "Cap at"),
        ("remove", "Remove the cap (org limit applies)"),
    ]

    def __init__(self, *args, session_ceiling: int | None = None, **kwargs):
        """``session_ceiling``: the organization's own concurrent-session limit; a project cap above it
        would never apply, so it is refused here (the service accepts it)."""
        super().__init__(*args, **kwargs)
        for name, label in LIMIT_LABELS.items():
            self.fields[f"{name}_mode"] = forms.ChoiceField(
                choices=self.MODES, initial="keep", widget=forms.RadioSelect, label=label
            )
            highest = MAX_CAP
            too_high = f"A cap can be at most {MAX_CAP:,}."
            if name == "max_concurrent_sessions" and session_ceiling:
                highest = min(MAX_CAP, session_ceiling)
                too_high = f"A cap can be at most the organization's ceiling of {highest:,}."
            self.fields[f"{name}_value"] = forms.IntegerField(
                required=False,
                min_value=1,
                max_value=highest,
                label=f"{label}: cap",
                error_messages={
                    "invalid": "Enter a whole number.",
                    "min_value": "A cap must be at least 1 (choose “Remove the cap” to lift it).",
                    "max_value": too_high,
                },
                widget=forms.NumberInput(
                    # limits.js checks “Cap at” (the second radio) as soon as a number is typed.
                    attrs={
                        "min": 1,
                        "max": highest,
                        "inputmode": "numeric",
                        "data-selects": f"id_{name}_mode_1",
                    }
                ),
            )

    def clean(self):
        cleaned = super().clean()
        for name in LIMIT_LABELS:
            # A number typed beside “Cap at” means that choice, whatever the radio says (no JS, typed first).
            if cleaned.get(f"{name}_mode") == "keep" and cleaned.get(f"{name}_value") is not None:
                cleaned[f"{name}_mode"] = "cap"
            missing = cleaned.get(f"{name}_mode") == "cap" and cleaned.get(f"{name}_value") is None
            if missing and f"{name}_value" not in self.errors:
                self.add_error(f"{name}_value", "Enter the cap, or choose another option.")
        return cleaned

    def changes(self) -> dict[str, int]:
        """The PATCH body: only the caps the admin touched; 0 removes a cap (spec: PATCH rules)."""
        body = {}
        for name in LIMIT_LABELS:
            mode = self.cleaned_data[f"{name}_mode"]
            if mode == "cap":
                body[name] = self.cleaned_data[f"{name}_value"]
            elif mode == "remove":
                body[name] = 0
        return body

    def rows(self):
        """(label, mode field, value field) per cap, for the template."""
        return [
            (label, self[f"{name}_mode"], self[f"{name}_value"], name) for name, label in LIMIT_LABELS.items()
        ]
