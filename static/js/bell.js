// The header's alert bell (templates/alerts/bell.html): asks the console for the firing count when the page
// loads, every POLL_MS while the tab is visible, at once when the tab comes back and when a page says alerts
// changed (the "alerts-changed" event an acknowledgement or a silence sends). A plain poll of one small
// fragment: an event stream per tab would hold one of the browser's six connections to the console on every
// page. An answer that is not the bell (signed out, no longer a member) stops it.
(() => {
  "use strict";
  const POLL_MS = 15000;
  let timer = null;
  let stopped = false;
  let busy = false;

  const bell = () => document.getElementById("alert-bell");

  async function refresh() {
    const current = bell();
    if (!current || stopped || busy) return;
    busy = true;
    try {
      const answer = await fetch(current.dataset.bellUrl, {
        headers: { "HX-Request": "true" },
        credentials: "same-origin",
        redirect: "manual",
        cache: "no-store",
      });
      if (answer.status !== 200) {
        if (answer.type === "opaqueredirect" || [401, 403, 404].includes(answer.status)) stopped = true;
        return;
      }
      const template = document.createElement("template");
      template.innerHTML = (await answer.text()).trim();
      const fresh = template.content.querySelector("#alert-bell");
      if (!fresh) {
        stopped = true;
        return;
      }
      const latest = bell();
      if (latest && latest.outerHTML !== fresh.outerHTML) latest.replaceWith(fresh);
    } catch (error) {
      // The console did not answer: the bell keeps what it showed and tries again at the next tick.
    } finally {
      busy = false;
    }
  }

  function schedule() {
    clearTimeout(timer);
    if (stopped || document.visibilityState !== "visible") return;
    timer = setTimeout(async () => {
      await refresh();
      schedule();
    }, POLL_MS);
  }

  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") refresh();
    schedule();
  });
  document.body.addEventListener("alerts-changed", () => refresh());
  refresh();
  schedule();
})();
