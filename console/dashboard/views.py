from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from console.web.decorators import load_memberships, org_view
from console.web.render import render


@require_http_methods(["GET"])
async def home(request):
    """Straight to the first organization; a short explanation for users without one."""
    memberships = await load_memberships(request)
    if not request.user.is_authenticated:
        return redirect("login")
    if memberships:
        return redirect("dashboard", org_slug=memberships[0].org.slug)
    return render(request, "dashboard/no_org.html")


@require_http_methods(["GET"])
@org_view("viewer")
async def dashboard(request):
    return render(request, "dashboard/index.html")
