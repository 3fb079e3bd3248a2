from oauth2_provider.oauth2_validators import OAuth2Validator

# Misbehaviour the tests ask for through /_idp/faults (one process: memory is enough).
FAULTS: dict[str, str] = {}


class Validator(OAuth2Validator):
    # Every claim below goes into the ID token, whatever the scopes (a demo's groups claim included).
    oidc_claim_scope = None

    def get_additional_claims(self, request):
        user = request.user
        return {
            "email": user.email,
            "email_verified": True,
            "preferred_username": user.username,
            "name": user.get_full_name() or user.username,
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }

    def get_id_token_dictionary(self, token, token_handler, request):
        claims, expiration = super().get_id_token_dictionary(token, token_handler, request)
        if FAULTS.get("nonce"):
            claims["nonce"] = FAULTS["nonce"]  # an ID token issued for another sign-in
        return claims, expiration
