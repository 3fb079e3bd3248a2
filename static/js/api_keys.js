// The copy button beside a one-time secret (templates/api_keys/secret.html): copies the field's value.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var field = document.querySelector(button.dataset.copy);
    var status = button.parentElement.querySelector("[data-copy-status]");
    if (!field) return;
    function said(text) { if (status) status.textContent = text; }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(function () { said("Copied."); }, function () {
        field.select(); said("Press Ctrl+C to copy.");
      });
    } else {
      field.select();
      said(document.execCommand && document.execCommand("copy") ? "Copied." : "Press Ctrl+C to copy.");
    }
  });
})();
