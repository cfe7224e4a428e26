/* Drawing plotly figures (dicts built by marketplace/charts.py) into page elements.
   Until a figure is drawn its element is empty, which the stylesheet shows as "Drawing
   chart…" (.chart:empty); if plotly.js did not load, the element says so (.chart-failed). */
(function () {
  "use strict";
  var CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  function failed(el) {
    if (el) { el.classList.add("chart-failed"); el.removeAttribute("aria-busy"); }
  }

  // On a narrow element (a phone) a legend beside the plot would squeeze it to a sliver:
  // put the legend under the plot instead.
  function fitted(el, layout) {
    if (el.clientWidth >= 560) { return layout; }
    var legend = Object.assign({}, layout.legend || {}, { orientation: "h", x: 0, xanchor: "left", y: -0.35, yanchor: "top" });
    return Object.assign({}, layout, { legend: legend });
  }

  function draw(el, figure) {
    if (!el || !figure) { return; }
    if (typeof Plotly === "undefined") { failed(el); return; }
    el.setAttribute("aria-busy", "true");
    Plotly.react(el, figure.data || [], fitted(el, figure.layout || {}), CONFIG).then(
      function () { el.removeAttribute("aria-busy"); el.classList.remove("chart-failed"); },
      function () { failed(el); }
    );
  }

  window.MarketCharts = { draw: draw, failed: failed };

  // Static figures: <div data-figure="script-id"> with the figure in a json_script element.
  document.querySelectorAll("[data-figure]").forEach(function (el) {
    var source = document.getElementById(el.dataset.figure);
    if (source) { draw(el, JSON.parse(source.textContent)); }
  });
})();
