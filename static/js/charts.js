/* Drawing plotly figures (dicts built by marketplace/charts.py) into page elements. */
(function () {
  "use strict";
  var CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  function draw(el, figure) {
    if (!el || !figure || typeof Plotly === "undefined") { return; }
    Plotly.react(el, figure.data || [], figure.layout || {}, CONFIG);
  }

  window.MarketCharts = { draw: draw };

  // Static figures: <div data-figure="script-id"> with the figure in a json_script element.
  document.querySelectorAll("[data-figure]").forEach(function (el) {
    var source = document.getElementById(el.dataset.figure);
    if (source) { draw(el, JSON.parse(source.textContent)); }
  });
})();
