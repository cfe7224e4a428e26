/* A simulation study's page: each run's progress while any runs (LabPoll from lab.js). */
(function () {
  "use strict";
  var el = document.getElementById("study-status");
  window.LabPoll.watch(el, function (s) {
    s.runs.forEach(function (run) {
      var row = el.querySelector('tr[data-run="' + run.id + '"]');
      if (!row) { return; }
      row.querySelector("progress").value = run.progress;
      row.querySelector(".run-percent").textContent = Math.round(100 * run.progress) + " %";
      row.querySelector(".run-status").textContent = run.status;
      row.querySelector(".run-attempts").textContent = run.attempts + " of " + run.max_attempts;
      row.querySelector(".run-message").textContent = run.message;
    });
  });
})();
