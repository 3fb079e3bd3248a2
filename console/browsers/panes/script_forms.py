"""Forms of the Script pane: checked here, so bad input never reaches the service."""

from __future__ import annotations

import re

from django import forms

from console.service.browser_playwright import DEFAULT_EXECUTOR

EXECUTOR_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
MAX_CODE_BYTES = 256 * 1024  # the service's bound on ``code`` (docs/sandbox.md)
MAX_TIMEOUT = 300


def executor_name(value: str) -> str:
    value = (value or "").strip() or DEFAULT_EXECUTOR
    if not EXECUTOR_NAME.match(value):
        raise forms.ValidationError("1 to 64 letters, digits, '.', '_' or '-'.")
    return value


class ScriptForm(forms.Form):
    code = forms.CharField(
        strip=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "data-script-editor": ""}),
        help_text="JavaScript or TypeScript, page, context and browser in scope; return a value to see it.",
    )
    executor = forms.CharField(
        required=False,
        initial=DEFAULT_EXECUTOR,
        max_length=64,
        widget=forms.TextInput(attrs={"list": "script-executor-names", "autocomplete": "off"}),
        help_text="default runs on the active tab; any other name gets a background tab of its own.",
    )
    timeout_sec = forms.IntegerField(
        min_value=1, max_value=MAX_TIMEOUT, initial=30, label="Timeout (seconds)"
    )

    def clean_code(self) -> str:
        code = self.cleaned_data["code"]
        if not code.strip():
            raise forms.ValidationError("Write the code to run.")
        if len(code.encode()) > MAX_CODE_BYTES:
            raise forms.ValidationError(f"At most {MAX_CODE_BYTES // 1024} KiB of code.")
        return code

    def clean_executor(self) -> str:
        return executor_name(self.cleaned_data["executor"])


class ExecutorForm(forms.Form):
    executor = forms.CharField(max_length=64)

    def clean_executor(self) -> str:
        return executor_name(self.cleaned_data["executor"])
