/* Pages that follow the market (issue 23, item 10): the job page and the job list poll their JSON
   view every few seconds, as the dashboard does. The browser keeps the last answer and asks again
   with If-None-Match (the views send an ETag and Cache-Control: private, no-cache), so an unchanged
   page costs a 304. Each answer's fragments replace the elements marked data-fragment="<key>";
   when a job's status changes the page reloads once (its waiting card, SLO and ledger follow). */
(function () {
  "use strict";
  var root = document.querySelector("[data-live-url]");
  if (!root) { return; }
  var url = root.dataset.liveUrl;
  var interval = parseInt(root.dataset.intervalMs || "3000", 10);
  var status = root.dataset.status;
  var note = document.querySelector("[data-live-status]");
  var busy = false;

  function apply(payload) {
    if (status && payload.status && payload.status !== status) { window.location.reload(); return; }
    Object.keys(payload.fragments || {}).forEach(function (key) {
      var el = document.querySelector('[data-fragment="' + key + '"]');
      if (el && el.innerHTML !== payload.fragments[key]) {
        el.innerHTML = payload.fragments[key];
        if (window.MarketTables) { window.MarketTables.label(el.closest("table") ? el.closest("table").parentNode : el); }
      }
    });
    if (note) { note.textContent = "Live: updated " + new Date().toLocaleTimeString() + ", every " + interval / 1000 + " s."; }
  }

  function poll() {
    if (busy || document.hidden) { return; }
    busy = true;
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (r.status === 401 || r.status === 403) { throw new Error("Session ended: reload to log in again."); }
        if (!r.ok) { throw new Error("Update failed (HTTP " + r.status + "); retrying."); }
        return r.json();
      })
      .then(apply)
      .catch(function (err) { if (note) { note.textContent = err.message; } })
      .finally(function () { busy = false; });
  }

  window.MarketLive = { poll: poll };
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { poll(); } });
  window.setInterval(poll, interval);
})();
