from django import forms

from console.accounts.models import AuditLog

MAX_AUDIT_PAGE = 1_000_000


class AuditFilterForm(forms.Form):
    action = forms.CharField(required=False, label="Action starts with")
    actor = forms.CharField(required=False)
    outcome = forms.ChoiceField(required=False, choices=[("", "any"), *AuditLog.Outcome.choices])
    # Bounded so the offset stays a database integer (10^20 overflowed SQLite's and crashed the page).
    page = forms.IntegerField(required=False, min_value=1, max_value=MAX_AUDIT_PAGE)
