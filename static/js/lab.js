/* Background runs' pages: poll a status URL while work runs; reload once it has finished.
   LabPoll.watch(el, render): el carries data-status-url and data-finished; render(status)
   updates the page from each answer. A run's page (#run-status) uses it here; a
   simulation study's page (simulations.js) with its own render. */
(function () {
  "use strict";
  function watch(el, render) {
    if (!el || el.dataset.finished === "1") { return; }
    function poll() {
      fetch(el.dataset.statusUrl, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (s) {
          if (!s) { setTimeout(poll, 3000); return; }
          render(s);
          if (s.finished) { window.location.reload(); } else { setTimeout(poll, 1000); }
        })
        .catch(function () { setTimeout(poll, 3000); });
    }
    setTimeout(poll, 500);
  }
  window.LabPoll = { watch: watch };

  function formatLeft(seconds) {
    if (seconds < 90) { return Math.max(1, Math.round(seconds)) + " s"; }
    if (seconds < 5400) { return Math.round(seconds / 60) + " min"; }
    return (seconds / 3600).toFixed(1) + " h";
  }

  watch(document.getElementById("run-status"), function (s) {
    document.getElementById("run-progress").value = s.progress;
    document.getElementById("run-percent").textContent = Math.round(100 * s.progress) + " %";
    document.getElementById("run-message").textContent = s.message;
    var left = document.getElementById("run-left");
    if (left) {  // the time left, at the pace so far: elapsed x (1 - progress) / progress
      var p = s.progress, e = s.elapsed_s;
      left.textContent = (e === null || e === undefined || p < 0.02 || p >= 1) ? "" :
        "about " + formatLeft(e * (1 - p) / p) + " left";
    }
    document.getElementById("run-status-label").textContent = s.status;
    var attempts = document.getElementById("run-attempts");
    if (attempts) { attempts.textContent = "(attempt " + s.attempts + " of " + s.max_attempts + ")"; }
    (s.parts || []).forEach(function (p) {
      var row = document.querySelector('#run-parts tr[data-part="' + p.part + '"]');
      if (!row) { return; }
      row.querySelector('[data-col="status"]').textContent = p.status;
      row.querySelector('[data-col="progress"]').value = p.progress;
      row.querySelector('[data-col="attempts"]').textContent = p.attempts + " of " + p.max_attempts;
      row.querySelector('[data-col="wall_s"]').textContent = p.wall_s === null ? "\u2014" : p.wall_s;
      row.querySelector('[data-col="worker"]').textContent = p.worker || "\u2014";
    });
  });
})();

/* The Experiments page: each run form asks the server for its estimated wall time (lab/estimate.json)
   as its fields change, and shows it above the form before anyone presses Run. */
(function () {
  "use strict";
  Array.prototype.forEach.call(document.querySelectorAll("form.run-form[data-estimate-url]"), function (form) {
    var box = document.getElementById(form.dataset.estimate);
    if (!box) { return; }
    var timer = null, asked = 0;
    function ask() {
      var query = new URLSearchParams();
      new FormData(form).forEach(function (value, key) { if (key !== "csrfmiddlewaretoken") { query.append(key, value); } });
      var mine = ++asked;
      fetch(form.dataset.estimateUrl + "?" + query.toString(), { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (s) {
          if (!s || mine !== asked) { return; }
          var bad = Object.keys(s.errors || {});
          if (s.estimate && !bad.length) {
            box.querySelector(".estimate-text").textContent = s.estimate.text;
            box.querySelector(".estimate-basis").textContent = "(" + s.estimate.basis + ")";
            box.querySelector(".estimate-which").textContent = "the parameters below";
          } else {
            box.querySelector(".estimate-text").textContent = "no estimate";
            box.querySelector(".estimate-basis").textContent = "";
            box.querySelector(".estimate-which").textContent = bad.length ? "a field to correct (" + bad.join(", ") + ")" : "these parameters";
          }
        })
        .catch(function () { return null; });
    }
    function soon() { clearTimeout(timer); timer = setTimeout(ask, 300); }
    form.addEventListener("input", soon);
    form.addEventListener("change", soon);
  });
})();
