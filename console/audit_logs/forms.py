"""The filter form of the service audit log page: the window and filters, checked before anything is sent."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from django import forms

from console.service.audit_logs import MAX_WINDOW_DAYS

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


class FilterForm(forms.Form):
    start = forms.DateField(widget=forms.DateInput(attrs={"type": "date"}), label="From (UTC)")
    end = forms.DateField(widget=forms.DateInput(attrs={"type": "date"}), label="To (UTC, inclusive)")
    method = forms.ChoiceField(required=False, choices=[("", "Any method"), *((m, m) for m in METHODS)])
    # Off by default, as the vendor's CLI: most reads are the console's own page loads and polling.
    show_reads = forms.BooleanField(
        required=False,
        label="Show reads (GET)",
        help_text="The console's own page loads and polls among them.",
    )
    auth_strategy = forms.CharField(
        required=False, max_length=50, label="Auth", widget=forms.TextInput(attrs={"placeholder": "api_key"})
    )
    service = forms.CharField(
        required=False, max_length=50, widget=forms.TextInput(attrs={"placeholder": "browsers"})
    )
    search = forms.CharField(
        required=False,
        max_length=200,
        widget=forms.TextInput(attrs={"placeholder": "path, email or user agent"}),
    )

    @classmethod
    def from_query(cls, query, today) -> FilterForm:
        data = query.copy()
        data.setdefault("start", (today - timedelta(days=1)).isoformat())
        data.setdefault("end", today.isoformat())
        return cls(data)

    def clean(self):
        cleaned = super().clean()
        start, end = cleaned.get("start"), cleaned.get("end")
        if start and end:
            if end < start:
                self.add_error("end", "The end is before the start.")
            elif (end - start).days + 1 > MAX_WINDOW_DAYS:
                self.add_error("end", f"The service keeps windows of at most {MAX_WINDOW_DAYS} days.")
        return cleaned

    def window(self) -> tuple[datetime, datetime]:
        start = datetime.combine(self.cleaned_data["start"], time.min, tzinfo=UTC)
        end = datetime.combine(self.cleaned_data["end"] + timedelta(days=1), time.min, tzinfo=UTC)
        return start, min(end, start + timedelta(days=MAX_WINDOW_DAYS))

    def reads_shown(self) -> bool:
        """GET requests are listed when asked for, or when the method picked is GET."""
        return bool(self.cleaned_data.get("show_reads")) or self.cleaned_data.get("method") == "GET"

    def filters(self) -> dict:
        data = self.cleaned_data
        return {
            "method": data["method"] or None,
            "exclude_method": None if self.reads_shown() else ["GET"],
            "auth_strategy": data["auth_strategy"].strip() or None,
            "service": data["service"].strip() or None,
            "search": data["search"].strip() or None,
        }
