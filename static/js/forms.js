/* Form behaviours without inline handlers (the Content-Security-Policy runs the site's own scripts only):
   <select data-autosubmit> submits its form on change; <form data-confirm="question"> asks before it submits. */
(function () {
  "use strict";
  document.querySelectorAll("[data-autosubmit]").forEach(function (el) {
    el.addEventListener("change", function () { el.form.submit(); });
  });
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.confirm)) { event.preventDefault(); }
    });
  });
})();

/* <form data-submit-once>: the first submission goes; any other while its answer is on the way is dropped (a double
   click on "Preview price" would otherwise send a second preview, refused with a 429 while the first is computed).
   The pressed button's data-busy-text, if any, is shown in the form's [data-busy-status] (aria-live). A page shown
   again from the back-forward cache takes submissions again. */
(function () {
  "use strict";
  document.querySelectorAll("form[data-submit-once]").forEach(function (form) {
    var status = form.querySelector("[data-busy-status]");
    form.addEventListener("submit", function (event) {
      if (event.defaultPrevented) { return; }
      if (form.dataset.submitting) { event.preventDefault(); return; }
      form.dataset.submitting = "1";
      form.setAttribute("aria-busy", "true");
      var text = event.submitter && event.submitter.dataset.busyText;
      if (status && text) { status.textContent = text; }
    });
    window.addEventListener("pageshow", function () {
      delete form.dataset.submitting;
      form.removeAttribute("aria-busy");
      if (status) { status.textContent = ""; }
    });
  });
})();

/* Times on the market clock (marketplace.web.forms.MarketTimeField): an input marked data-market-time
   takes "in 2 h", "+900 s", "now", "1:30:00" or 5400; beside it, the time it names on the market clock and how far
   that is from now, following the header clock (static/js/clock.js). The server reads the same text when the form
   is sent, so a relative time ("in 15 min") counts from then. */
(function () {
  "use strict";
  var UNITS = { s: 1, sec: 1, secs: 1, second: 1, seconds: 1, m: 60, min: 60, mins: 60, minute: 60, minutes: 60,
    h: 3600, hr: 3600, hrs: 3600, hour: 3600, hours: 3600, d: 86400, day: 86400, days: 86400 };
  function duration(text) {
    var re = /(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)[\s,]*/y, total = 0, found = false, m;
    text = text.trim();
    re.lastIndex = 0;
    while (re.lastIndex < text.length) {
      m = re.exec(text);
      if (!m || (m[2] && !(m[2] in UNITS))) { return null; }
      total += parseFloat(m[1]) * UNITS[m[2] || "s"];
      found = true;
    }
    return found ? total : null;
  }
  function parse(text, now) {
    var t = text.trim().toLowerCase(), rel = /^(\+|in )/.test(t), body = t.replace(/^(\+|in )/, "").trim(), s;
    if (t === "now") { return now; }
    var hms = /^(\d+):([0-5]\d)(?::([0-5]\d(?:\.\d*)?))?$/.exec(body);
    s = hms ? parseInt(hms[1], 10) * 3600 + parseInt(hms[2], 10) * 60 + parseFloat(hms[3] || "0") : duration(body);
    if (s === null || !isFinite(s)) { return null; }
    return rel ? now + s : s;
  }
  function span(s) {
    var a = Math.abs(Math.round(s)), h = Math.floor(a / 3600), m = Math.floor((a % 3600) / 60), r = a % 60;
    return (h ? h + " h " : "") + (h || m ? m + " min " : "") + r + " s";
  }
  var inputs = document.querySelectorAll("input[data-market-time]");
  if (!inputs.length) { return; }
  function clockNow() {
    if (window.MarketClock) { return window.MarketClock.now(); }
    var el = document.getElementById("sim-clock");
    return el ? parseFloat(el.dataset.simTime || "0") : 0;
  }
  function hms(s) { return window.MarketClock ? window.MarketClock.hms(s) : Math.round(s) + " s"; }
  inputs.forEach(function (input) {
    var out = document.createElement("span");
    out.className = "market-time-preview small";
    out.id = input.id + "-preview";
    out.setAttribute("aria-live", "polite");
    input.insertAdjacentElement("afterend", out);
    input.setAttribute("aria-describedby", ((input.getAttribute("aria-describedby") || "") + " " + out.id).trim());
    function update() {
      var now = clockNow(), t = parse(input.value, now);
      if (input.value.trim() === "") { out.textContent = ""; return; }
      if (t === null) { out.textContent = "Not a time: try “in 2 h”, “+900 s” or “1:30:00”."; out.classList.add("error"); return; }
      out.classList.remove("error");
      out.textContent = "= " + hms(t) + " on the market clock (" + Math.round(t) + " s), " +
        (t >= now ? "in " + span(t - now) : span(now - t) + " ago: in the past");
      out.classList.toggle("error", t < now);
    }
    input.addEventListener("input", update);
    document.addEventListener("market-clock", update);
    update();
  });
})();
