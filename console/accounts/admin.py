from django import forms
from django.contrib import admin

from console.accounts.forms import ServiceTargetMixin
from console.accounts.models import AuditLog, Invite, Membership, Organization


class OrganizationAdminForm(ServiceTargetMixin, forms.ModelForm):
    service_base_url = forms.URLField(label="Service base URL", max_length=300, assume_scheme="https")
    # Write-only, as everywhere else: the decrypted key is never put into a page.
    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Leave empty to keep the current key (required when the base URL changes).",
    )

    class Meta:
        model = Organization
        fields = ["name", "slug", "service_base_url", "api_key", "default_project_id"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The URL as loaded, before the form's data is applied to the instance.
        self.current_service_url = self.instance.service_base_url if self.instance.pk else ""


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    form = OrganizationAdminForm
    list_display = ["name", "slug", "service_base_url", "api_key_hint", "default_project_id"]
    search_fields = ["name", "slug"]
    readonly_fields = ["api_key_hint"]
    inlines = [MembershipInline]

    @admin.display(description="API key")
    def api_key_hint(self, obj):
        return obj.api_key_hint

    def save_model(self, request, obj, form, change):
        if form.cleaned_data.get("api_key"):
            obj.set_api_key(form.cleaned_data["api_key"])
        super().save_model(request, obj, form, change)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "org", "role", "project_id"]
    list_filter = ["role", "org"]
    autocomplete_fields = ["user"]


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    list_display = ["org", "email", "role", "created_at", "expires_at", "accepted_at"]
    list_filter = ["org"]
    # The token hash is useless to an attacker but also to a reader; keep it off the page.
    exclude = ["token_hash"]
    readonly_fields = ["accepted_at", "accepted_by", "created_by"]


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    list_display = [
        "created_at",
        "org",
        "actor_username",
        "action",
        "target_id",
        "outcome",
        "count",
        "last_at",
        "request_id",
    ]
    list_filter = ["org", "outcome"]
    search_fields = ["action", "actor_username", "target_id", "request_id"]

    # The audit log is append-only, even for superusers.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
