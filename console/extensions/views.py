"""Extensions: upload with progress, list, download (streamed), delete by id or name (notes §12).

The upload is read by Django's upload handlers (a temporary file once it passes
FILE_UPLOAD_MAX_MEMORY_SIZE), checked here, then streamed to the service from that file object.
"""

from __future__ import annotations

import re

from django.contrib import messages
from django.http import Http404, HttpResponseRedirect
from django.template.defaultfilters import filesizeformat
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from console.accounts.audit import audited
from console.extensions.forms import UploadForm
from console.service import Conflict, Forbidden, Invalid, NotFound, ServiceError, extensions
from console.web import downloads
from console.web.decorators import org_view
from console.web.forms import apply_service_errors
from console.web.pages import get_or_404, org_reverse, searchable_list
from console.web.render import render


async def _upload(request, form: UploadForm) -> extensions.Extension | None:
    """Send a valid form's archive; on a refusal the form carries the reason and None is returned."""
    upload = form.cleaned_data["file"]
    name = form.cleaned_data["name"] or None
    try:
        async with audited(request, "extension.upload", detail=f"name={name or ''}") as entry:
            record = await extensions.upload_extension(
                request.service, upload.file, name=name, filename=upload.name
            )
            entry.target_id = record.id
            entry.detail = f"name={record.name or ''} size={record.size_bytes} sha256={record.checksum or ''}"
    except Invalid as exc:
        apply_service_errors(form, exc)
    except Conflict as exc:
        form.add_error("name", f"{exc.message}. Pick another name, or delete the existing extension first.")
    except Forbidden as exc:  # a plan's bound on how many (or how many bytes of) extensions are kept
        form.add_error("file", f"The service refused to keep another extension: {exc.message}")
    except ServiceError as exc:
        if exc.status != 413:
            raise
        form.add_error("file", f"The service refused the file as too large: {exc.message}")
    else:
        return record
    return None


@require_http_methods(["GET"])
@org_view("viewer")
async def extension_list(request):
    return await searchable_list(
        request, "extensions/list.html", "extensions-table", extensions.list_extensions, {}
    )


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def extension_create(request):
    """The upload page; its form sends itself with a progress bar (static/js/upload.js) and swaps in place
    with its errors, or goes to the list once the service kept the extension."""
    form = UploadForm()
    if request.method == "POST":
        in_place = request.htmx and request.htmx.target == "extensions-upload"
        form = UploadForm(request.POST, request.FILES)
        if form.is_valid():
            uploaded = await _upload(request, form)
            if uploaded is not None:
                label = uploaded.name or uploaded.id
                messages.success(
                    request, f"Extension “{label}” uploaded ({filesizeformat(uploaded.size_bytes)})."
                )
                listed = org_reverse(request, "extensions:list")
                return HttpResponseClientRedirect(listed) if in_place else HttpResponseRedirect(listed)
    context = {"form": form, "max_bytes": UploadForm.max_bytes()}
    return render(request, "extensions/new.html", context, partial="extensions-upload")


DISPOSITION_NAME = re.compile(r'filename\s*=\s*"?([^";]*)"?', re.IGNORECASE)


def _safe_name(value: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", value).strip("-.")[:200] or "extension"


def _zip_name(disposition: str) -> str | None:
    """The file name a service's ``Content-Disposition`` gives, made safe, if it names a zip."""
    match = DISPOSITION_NAME.search(disposition)
    if match is None:
        return None
    name = _safe_name(match.group(1))
    return name if name.lower().endswith(".zip") and name.lower() != ".zip" else None


@require_http_methods(["GET"])
@org_view("viewer")
async def extension_download(request, id_or_name: str):
    """Stream the zip from the service to the browser, chunk by chunk."""
    (reply, chunks), stack = await downloads.opened(
        extensions.download_extension(request.service, id_or_name), "extension"
    )
    # Always an attachment under a name of our own making: the service's header is read for the extension's
    # name only (a hostile one said ``inline; filename="../../evil.html"``).
    filename = _zip_name(reply.headers.get("content-disposition", "")) or _safe_name(id_or_name) + ".zip"
    length = reply.headers.get("content-length")
    return downloads.attachment(
        chunks, stack, filename=filename, content_type="application/zip", length=length
    )


@require_http_methods(["GET", "POST"])
@org_view("admin")
async def extension_delete(request, id_or_name: str):
    """Confirm, then delete; the URL takes the extension's id or its name."""
    extension = await get_or_404(extensions.get_extension(request.service, id_or_name), "extension")
    if request.method == "POST":
        try:
            async with audited(
                request, "extension.delete", target_id=extension.id, detail=extension.name or ""
            ):
                await extensions.delete_extension(request.service, extension.id)
        except NotFound:
            raise Http404("No such extension") from None
        messages.success(request, f"Extension “{extension.label}” deleted.")
        url = org_reverse(request, "extensions:list")
        return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)
    return render(request, "extensions/delete.html", {"extension": extension})
