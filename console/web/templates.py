"""The template backend: Django's, with every rendered template passed through ``text.visible``.

Escaping happens per variable; making control and bidi characters visible happens here once, on the whole
output, so every page and partial shows upstream text the same way without each template (or each
Python-built fragment a template includes) remembering a filter. Our own templates contain no such
characters, so nothing of ours changes.
"""

from django.template.backends import django
from django.utils.safestring import mark_safe

from console.web.text import visible


class Template(django.Template):
    def render(self, context=None, request=None):
        # Still safe (SafeString) when a template is rendered into another: only symbols were swapped in.
        return mark_safe(visible(super().render(context, request)))  # noqa: S308


class DjangoTemplates(django.DjangoTemplates):
    def from_string(self, template_code):
        return Template(self.engine.from_string(template_code), self)

    def get_template(self, template_name):
        try:
            return Template(self.engine.get_template(template_name), self)
        except django.TemplateDoesNotExist as exc:
            django.reraise(exc, self)
