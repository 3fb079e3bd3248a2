// Project limits form: typing a cap checks its "Cap at" radio (the input names the radio in data-selects).
// The server reads a typed number as "Cap at" too, so this is only what the person sees.
(function () {
  "use strict";
  document.addEventListener("input", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches("input[data-selects]") || input.value === "") return;
    var radio = document.getElementById(input.dataset.selects);
    if (radio) radio.checked = true;
  });
})();
