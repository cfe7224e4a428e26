/* The header's market clock on every page: it ticks in the browser at the market's clock speed
   (simulated s per wall s, 0 while the clock is stopped) from the time the page was rendered, and
   re-reads /clock.json every few seconds so it follows pauses and speed changes. Shows h:mm:ss. */
(function () {
  "use strict";
  var el = document.getElementById("sim-clock");
  if (!el || !el.dataset.url) { return; }
  var base = parseFloat(el.dataset.simTime), speed = parseFloat(el.dataset.speed || "0");
  var at = performance.now();
  var SYNC_MS = 10000;

  function hms(s) {
    var t = Math.max(0, Math.round(s)), h = Math.floor(t / 3600), m = Math.floor((t % 3600) / 60), r = t % 60;
    return h + ":" + (m < 10 ? "0" : "") + m + ":" + (r < 10 ? "0" : "") + r;
  }
  function now() { return base + speed * (performance.now() - at) / 1000; }
  function show() {
    var t = now();
    el.textContent = hms(t);
    el.dataset.simNow = t.toFixed(1);
    document.dispatchEvent(new CustomEvent("market-clock", { detail: { simTime: t, speed: speed } }));
  }
  function sync() {
    if (document.hidden) { return; }
    fetch(el.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(function (c) { base = c.sim_time; speed = c.speed; at = performance.now(); show(); })
      .catch(function () { speed = 0; base = now(); at = performance.now(); });  // unknown: stop rather than guess
  }
  window.MarketClock = { now: now, sync: sync, hms: hms };
  show();
  window.setInterval(show, 1000);
  window.setInterval(sync, SYNC_MS);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) { sync(); } });
})();
