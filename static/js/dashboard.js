/* The live dashboard: poll the JSON view and update numbers and charts with Plotly.react. */
(function () {
  "use strict";
  var root = document.getElementById("dashboard");
  if (!root) { return; }
  var url = root.dataset.url;
  var interval = parseInt(root.dataset.intervalMs || "3000", 10);
  var status = document.getElementById("live-status");
  var scope = document.getElementById("jobs-scope");
  var busy = null;  // the request in flight, if any
  var paused = false;

  function setStatus(text, isError) {
    status.textContent = text;
    status.classList.toggle("error", !!isError);
  }

  function apply(payload) {
    var text = payload.headline.text, meters = payload.headline.meters;
    Object.keys(text).forEach(function (id) {
      if (id === "sim-clock" && window.MarketClock) { window.MarketClock.sync(); return; }  // the header clock reads its own
      var el = document.getElementById(id);
      if (el) { el.textContent = text[id]; }
    });
    Object.keys(meters).forEach(function (id) {
      var el = document.getElementById(id);
      if (el) { el.value = meters[id]; }
    });
    Object.keys(payload.figures).forEach(function (key) {
      window.MarketCharts.draw(document.getElementById("chart-" + key), payload.figures[key]);
    });
  }

  function refresh() {
    if (busy || paused || document.hidden) { return busy; }
    var query = "?jobs=" + encodeURIComponent(scope ? scope.value : "all");
    busy = fetch(url + query, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (response.status === 401) { throw new Error("Session ended: log in again for live data."); }
        if (!response.ok) { throw new Error("Update failed (HTTP " + response.status + "); retrying."); }
        return response.json();
      })
      .then(function (payload) {
        apply(payload);
        setStatus("Live: updated " + new Date().toLocaleTimeString() + ", every " + interval / 1000 + " s");
      })
      .catch(function (err) { setStatus(err.message || "Update failed; retrying.", true); })
      .finally(function () { busy = null; });
    return busy;
  }

  // Pause and resume the polling (for tests and debugging); pause() resolves once no request is in flight.
  window.MarketDashboard = {
    pause: function () { paused = true; return Promise.resolve(busy); },
    resume: function () { paused = false; return refresh(); },
  };

  if (scope) { scope.addEventListener("change", refresh); }
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { refresh(); } });
  refresh();
  window.setInterval(refresh, interval);
})();
