"""The sign-in pages: password login, single sign-on's two ends, the user's sessions and two-factor devices,
and an org's sign-in settings. Above ``console.web`` (whose org views enforce ``console.signin``'s policy),
so the rules they use stay below it."""
