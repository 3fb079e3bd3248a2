"""The scripted websites behind the sandbox's login flows (documented in docs/sandbox-sites.md).

A site is a small graph of pages. A page asks for fields, offers choices, or waits for an action
outside the browser (a push approval). The domain of an auth connection picks its site; a domain that
is not listed gets the plain username + password site. Between them the sites reach every branch of
the login state machine of notes §9.

Site rules shared by every page (so tests and demos can steer a flow):
- a password that starts with ``wrong`` is refused: the page comes back with the field marked
  ``rejected`` and ``website_error`` set;
- a one-time code (``code``, ``totp_code``) must be six digits and not ``000000``;
- every other required value must be non-empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DONE = "done"


@dataclass(frozen=True)
class FieldSpec:
    id: str
    type: str  # identifier | password | code | totp_code | totp_secret | text
    ref: str  # the credential value key this field reads from and saves to
    label: str
    hint: str | None = None
    required: bool = True
    placeholder: str | None = None
    linked_mfa_type: str | None = None  # legacy: which MFA method a code belongs to


@dataclass(frozen=True)
class ChoiceSpec:
    id: str
    type: (
        str  # mfa_method | sso_provider | sign_in_method | auth_method | identifier_method | account | other
    )
    label: str
    next: str
    description: str | None = None
    masked_destination: str | None = None
    mfa_type: str | None = None
    provider: str | None = None  # for sso_provider choices


@dataclass(frozen=True)
class PageSpec:
    fields: tuple[FieldSpec, ...] = ()
    choices: tuple[ChoiceSpec, ...] = ()
    next: str = DONE  # where a field submit leads
    external_message: str | None = None  # AWAITING_EXTERNAL_ACTION while set
    approve_after: float = 20.0  # tenant-clock seconds until the external action happens
    approve_next: str = DONE


@dataclass(frozen=True)
class Site:
    key: str
    domain: str
    summary: str
    pages: dict[str, PageSpec] = field(default_factory=dict)
    start: str = "login"
    fail: tuple[str, str] | None = None  # (error_code, error_message) when discovery fails
    legacy_only: bool = False  # the page is described only with the legacy lists
    session_hours: float = 24.0  # how long a login stays valid on the site
    post_login_path: str = "/home"
    # What a stored credential must hold to log in unattended, and the negative reason otherwise.
    needs_values: tuple[str, ...] = ("username", "password")
    mfa: str | None = None  # None | "totp" | "sms_or_totp" | "sms" | "email" | "push" | "account"

    @property
    def post_login_url(self) -> str:
        return f"https://{self.domain}{self.post_login_path}"


EMAIL = FieldSpec("email", "identifier", "username", "Email or username", placeholder="you@example.com")
PASSWORD = FieldSpec("password", "password", "password", "Password")
SMS_CODE = FieldSpec(
    "sms_code",
    "code",
    "sms_code",
    "Verification code",
    hint="We sent a 6-digit code by SMS to the number ending in 21",
    placeholder="123456",
    linked_mfa_type="sms",
)
EMAIL_CODE = FieldSpec(
    "email_code",
    "code",
    "email_code",
    "Email code",
    hint="Check j•••@example.com for a 6-digit code",
    placeholder="123456",
    linked_mfa_type="email",
)
TOTP = FieldSpec(
    "totp",
    "totp_code",
    "totp_code",
    "Authenticator code",
    hint="The 6-digit code from your authenticator app",
    placeholder="123456",
    linked_mfa_type="totp",
)
SMS_CHOICE = ChoiceSpec(
    "mfa_sms",
    "mfa_method",
    "Text message",
    "sms",
    description="Get a code by SMS",
    masked_destination="+1 ••• ••• ••21",
    mfa_type="sms",
)
EMAIL_CHOICE = ChoiceSpec(
    "mfa_email",
    "mfa_method",
    "Email",
    "email",
    description="Get a code by email",
    masked_destination="j•••@example.com",
    mfa_type="email",
)
TOTP_CHOICE = ChoiceSpec(
    "mfa_totp",
    "mfa_method",
    "Authenticator app",
    "totp",
    description="Use the code from your authenticator app",
    mfa_type="totp",
)

_SITES = [
    Site(
        "plain",
        "plain.example.com",
        "One page: email and password, then signed in. Any domain not listed behaves like this.",
        pages={"login": PageSpec(fields=(EMAIL, PASSWORD))},
    ),
    Site(
        "identifier-first",
        "identifier-first.example.com",
        "Email on one page, then the password on the next.",
        pages={
            "login": PageSpec(fields=(EMAIL,), next="password"),
            "password": PageSpec(fields=(PASSWORD,)),
        },
    ),
    Site(
        "mfa",
        "mfa.example.com",
        "Email and password, then a choice of second factor (SMS, email or authenticator app), then the "
        "code.",
        pages={
            "login": PageSpec(fields=(EMAIL, PASSWORD), next="mfa"),
            "mfa": PageSpec(choices=(SMS_CHOICE, EMAIL_CHOICE, TOTP_CHOICE)),
            "sms": PageSpec(fields=(SMS_CODE,)),
            "email": PageSpec(fields=(EMAIL_CODE,)),
            "totp": PageSpec(fields=(TOTP,)),
        },
        mfa="sms_or_totp",
    ),
    Site(
        "totp",
        "totp.example.com",
        "Email and password, then an authenticator (TOTP) code. A credential with a TOTP secret logs in "
        "without a human.",
        pages={
            "login": PageSpec(fields=(EMAIL, PASSWORD), next="totp"),
            "totp": PageSpec(fields=(TOTP,)),
        },
        mfa="totp",
    ),
    Site(
        "accounts",
        "accounts.example.com",
        "Email and password, then an account picker (which organization to enter).",
        pages={
            "login": PageSpec(fields=(EMAIL, PASSWORD), next="account"),
            "account": PageSpec(
                choices=(
                    ChoiceSpec(
                        "acct_acme", "account", "Acme Corp", DONE, description="Administrator · 42 members"
                    ),
                    ChoiceSpec("acct_globex", "account", "Globex", DONE, description="Member · 7 members"),
                    ChoiceSpec("acct_personal", "account", "Personal", DONE, description="Just you"),
                )
            ),
        },
        mfa="account",
    ),
    Site(
        "sso",
        "sso.example.com",
        "Single sign-on buttons (Google, Okta) beside an email field; Google then asks for its own "
        "email and password.",
        pages={
            "login": PageSpec(
                fields=(EMAIL,),
                choices=(
                    ChoiceSpec(
                        "sso_google", "sso_provider", "Continue with Google", "google", provider="google"
                    ),
                    ChoiceSpec("sso_okta", "sso_provider", "Continue with Okta", "okta", provider="okta"),
                ),
                next="password",
            ),
            "password": PageSpec(fields=(PASSWORD,)),
            "google": PageSpec(
                fields=(
                    FieldSpec("google_email", "identifier", "username", "Google account email"),
                    FieldSpec("google_password", "password", "password", "Google password"),
                )
            ),
            "okta": PageSpec(
                fields=(
                    FieldSpec("okta_username", "identifier", "username", "Okta username"),
                    FieldSpec("okta_password", "password", "password", "Okta password"),
                )
            ),
        },
    ),
    Site(
        "push",
        "push.example.com",
        "Email and password, then a push approval on a phone that arrives after 20 s on the tenant "
        "clock; a fallback lets the human ask for an SMS code instead.",
        pages={
            "login": PageSpec(fields=(EMAIL, PASSWORD), next="push"),
            "push": PageSpec(
                external_message="Open the Example app on your phone (Pixel 8) and approve the sign-in "
                "request. Number shown: 47.",
                choices=(
                    ChoiceSpec(
                        "fallback_sms",
                        "mfa_method",
                        "Send a code by SMS instead",
                        "sms",
                        masked_destination="+1 ••• ••• ••21",
                        mfa_type="sms",
                    ),
                ),
                approve_after=20.0,
            ),
            "sms": PageSpec(fields=(SMS_CODE,)),
        },
        mfa="push",
    ),
    Site(
        "workspace",
        "workspace.example.com",
        "A free-text workspace name beside email and password.",
        pages={
            "login": PageSpec(
                fields=(
                    FieldSpec(
                        "workspace",
                        "text",
                        "workspace",
                        "Workspace",
                        hint="The name in your workspace address, as in acme.workspace.example.com",
                        placeholder="acme",
                    ),
                    EMAIL,
                    PASSWORD,
                )
            )
        },
        needs_values=("workspace", "username", "password"),
    ),
    Site(
        "legacy",
        "legacy.example.com",
        "Described only with the legacy lists (discovered_fields, mfa_options): email and password, then "
        "an MFA pick (SMS or email), then the emailed or texted code.",
        pages={
            "login": PageSpec(fields=(EMAIL, PASSWORD), next="mfa"),
            "mfa": PageSpec(choices=(SMS_CHOICE, EMAIL_CHOICE)),
            "sms": PageSpec(fields=(SMS_CODE,)),
            "email": PageSpec(fields=(EMAIL_CODE,)),
        },
        legacy_only=True,
        mfa="email",
    ),
    Site(
        "bot",
        "bot.example.com",
        "Blocks automated browsers: discovery fails with error_code bot_detected.",
        fail=(
            "bot_detected",
            "The site showed a CAPTCHA challenge and blocked the automated browser.",
        ),
    ),
    # Demo domains (the credential vault's demo data) reuse the scripts above.
    Site(
        "github",
        "github.com",
        "Demo: username and password, then an authenticator code (like totp.example.com).",
        pages={
            "login": PageSpec(fields=(EMAIL, PASSWORD), next="totp"),
            "totp": PageSpec(fields=(TOTP,)),
        },
        mfa="totp",
        post_login_path="/dashboard",
    ),
]

SITES = {site.domain: site for site in _SITES}
DEFAULT = SITES["plain.example.com"]


def site_for(domain: str) -> Site:
    """The scripted site of a domain (or of its nearest listed parent), else the plain site."""
    domain = domain.lower().rstrip(".")
    while domain:
        if domain in SITES:
            return SITES[domain]
        _, _, domain = domain.partition(".")
    return DEFAULT


def reauth_blocker(site: Site, values: dict, has_totp: bool) -> str | None:
    """Why stored values cannot log in to ``site`` unattended (a can_reauth_reason), or None."""
    if site.fail:
        return "no_viable_plans"
    if any(not values.get(key) for key in site.needs_values):
        return "no_credential" if not values else "requires_customer_input"
    match site.mfa:
        case "totp":
            return None if has_totp else "requires_totp_without_secret"
        case "sms_or_totp":
            return None if has_totp else "requires_sms_code"
        case "sms":
            return "requires_sms_code"
        case "email":
            return "requires_email_code"
        case "push":
            return "requires_external_action"
        case "account":
            return "requires_customer_input"
    return None


def check_value(spec: FieldSpec, value: str) -> str | None:
    """The site's visible error for a submitted value, or None when the site accepts it."""
    value = value.strip() if spec.type != "password" else value
    if spec.type == "password":
        if not value:
            return "Enter your password."
        if value.lower().startswith("wrong"):
            return "Incorrect password. Try again."
        return None
    if spec.type in ("code", "totp_code"):
        if not (len(value) == 6 and value.isdigit()):
            return "Enter the 6-digit code."
        if value == "000000":
            return "That code didn't work. Check the code and try again."
        return None
    if spec.required and not value:
        return f"Enter your {spec.label.lower()}."
    return None
