"""The console's own audit log (the service's is console/audit_logs): filters, pages of 50 rows."""

from django.views.decorators.http import require_http_methods

from console.accounts.models import AuditLog
from console.audit.forms import MAX_AUDIT_PAGE, AuditFilterForm
from console.web.decorators import org_view
from console.web.render import render

PAGE_SIZE = 50


@require_http_methods(["GET"])
@org_view("admin")
async def audit_log(request):
    form = AuditFilterForm(request.GET)
    form.is_valid()
    filters = form.cleaned_data
    entries = AuditLog.objects.filter(org=request.org)
    if filters.get("action"):
        entries = entries.filter(action__startswith=filters["action"])
    if filters.get("actor"):
        entries = entries.filter(actor_username__iexact=filters["actor"])
    if filters.get("outcome"):
        entries = entries.filter(outcome=filters["outcome"])
    page = filters.get("page") or 1
    page_notice = ""
    if "page" in form.errors:
        page_notice = f"“page” must be a whole number from 1 to {MAX_AUDIT_PAGE:,}; showing page 1."
    offset = (page - 1) * PAGE_SIZE
    # One extra row tells whether a next page exists without counting the whole table.
    rows = [e async for e in entries[offset : offset + PAGE_SIZE + 1]]
    query = request.GET.copy()
    query.pop("page", None)
    ctx = {
        "form": form,
        "entries": rows[:PAGE_SIZE],
        "page": page,
        "page_notice": page_notice,
        "has_next": len(rows) > PAGE_SIZE,
        "query": query.urlencode(),
    }
    return render(request, "audit/list.html", ctx, "audit-table")
