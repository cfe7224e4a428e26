/* A simulation study's page: poll its runs' progress while any runs; reload once all have finished. */
(function () {
  "use strict";
  var el = document.getElementById("study-status");
  if (!el || el.dataset.finished === "1") { return; }
  function poll() {
    fetch(el.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (s) {
        if (!s) { setTimeout(poll, 3000); return; }
        s.runs.forEach(function (run) {
          var row = el.querySelector('tr[data-run="' + run.id + '"]');
          if (!row) { return; }
          row.querySelector("progress").value = run.progress;
          row.querySelector(".run-percent").textContent = Math.round(100 * run.progress) + " %";
          row.querySelector(".run-status").textContent = run.status;
          row.querySelector(".run-message").textContent = run.message;
        });
        if (s.finished) { window.location.reload(); } else { setTimeout(poll, 1000); }
      })
      .catch(function () { setTimeout(poll, 3000); });
  }
  setTimeout(poll, 500);
})();
