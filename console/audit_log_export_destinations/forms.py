"""Forms of the audit-log export destinations pages: checked here, so bad input never reaches the service."""

from __future__ import annotations

import re

from django import forms

BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
REGION = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-\d$")
ROLE_ARN = re.compile(r"^arn:aws:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")


class DestinationForm(forms.Form):
    bucket = forms.CharField(max_length=63, help_text="The S3 bucket, e.g. acme-audit-logs.")
    prefix = forms.CharField(max_length=512, required=False, help_text="Objects go under it; may be empty.")
    region = forms.CharField(max_length=32, initial="us-east-1")
    role_arn = forms.CharField(
        max_length=600,
        label="Role ARN",
        widget=forms.TextInput(attrs={"placeholder": "arn:aws:iam::123456789012:role/kernel-audit-export"}),
        help_text="The role the service assumes in your account (trust its role, with the external id).",
    )
    kms_key_id = forms.CharField(max_length=2048, required=False, label="KMS key (optional)")

    def clean_bucket(self) -> str:
        value = self.cleaned_data["bucket"].strip()
        if not BUCKET.match(value):
            raise forms.ValidationError("3 to 63 lowercase letters, digits, '.' and '-'.")
        return value

    def clean_prefix(self) -> str:
        value = self.cleaned_data["prefix"].strip()
        if value.startswith("/"):
            raise forms.ValidationError("Leave out the leading '/'.")
        return value

    def clean_region(self) -> str:
        value = self.cleaned_data["region"].strip()
        if not REGION.match(value):
            raise forms.ValidationError("An AWS region such as us-east-1.")
        return value

    def clean_role_arn(self) -> str:
        value = self.cleaned_data["role_arn"].strip()
        if not ROLE_ARN.match(value):
            raise forms.ValidationError("arn:aws:iam::<12-digit account>:role/<name>.")
        return value

    def clean_kms_key_id(self) -> str:
        return self.cleaned_data["kms_key_id"].strip()
