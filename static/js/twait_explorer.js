/* T_wait explorer (settings page): runs the paper's starvation example with the T_wait being
   edited, before saving, and draws the starved queue's allocation (marketplace/views_fairshare.py). */
(function () {
  "use strict";
  var box = document.getElementById("twait-explorer");
  var input = document.getElementById("id_t_wait");
  if (!box || !input) { return; }
  var chart = document.getElementById("twait-explorer-chart");
  var text = document.getElementById("twait-explorer-text");
  var timer = null;

  function show(sentences, isError) {
    text.innerHTML = "";
    sentences.forEach(function (s) {
      var p = document.createElement("p");
      p.textContent = s;
      if (isError) { p.className = "form-errors"; p.setAttribute("role", "alert"); }
      text.appendChild(p);
    });
  }

  function run() {
    var url = box.dataset.url + "?t_wait=" + encodeURIComponent(input.value.trim());
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.json().then(function (body) { return { ok: r.ok, body: body }; }); })
      .then(function (res) {
        if (!res.ok) { show((res.body.errors && res.body.errors.t_wait) || ["Cannot run the example."], true); return; }
        show(res.body.text, false);
        if (window.MarketCharts) { window.MarketCharts.draw(chart, res.body.figure); }
      })
      .catch(function () { show(["The explorer is unavailable."], true); });
  }

  input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(run, 300); });
  run();
})();
