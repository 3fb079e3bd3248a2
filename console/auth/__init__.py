"""Auth connection pages (URL namespace ``auth``). A plain package, not a Django app: the app label
``auth`` belongs to django.contrib.auth."""
