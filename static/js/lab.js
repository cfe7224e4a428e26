/* An experiment run's page: poll its status while it runs; reload once it has finished. */
(function () {
  "use strict";
  var el = document.getElementById("run-status");
  if (!el || el.dataset.finished === "1") { return; }
  function poll() {
    fetch(el.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) {
        if (!s) { setTimeout(poll, 3000); return; }
        document.getElementById("run-progress").value = s.progress;
        document.getElementById("run-percent").textContent = Math.round(100 * s.progress) + " %";
        document.getElementById("run-message").textContent = s.message;
        document.getElementById("run-status-label").textContent = s.status;
        if (s.finished) { window.location.reload(); } else { setTimeout(poll, 1000); }
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 500);
})();
