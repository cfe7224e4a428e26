/* Drawing plotly figures (dicts built by marketplace/charts.py) into page elements.
   Until a figure is drawn its element is empty, which the stylesheet shows as "Drawing
   chart…" (.chart:empty); if plotly.js did not load, the element says so (.chart-failed). */
(function () {
  "use strict";
  var CONFIG = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };

  function failed(el) {
    if (el) { el.classList.add("chart-failed"); el.removeAttribute("aria-busy"); }
  }

  // Phones (a chart narrower than 560 px). A legend beside the plot would squeeze it to a sliver, and
  // one at a fixed paper position below it lands on the x axis' title; a long title runs off the chart:
  //  - the legend goes under the plot, anchored to the figure's bottom edge (yref "container"): plotly then
  //    reserves its height below the axis' own margin, so the two never meet; the figure grows by that
  //    height, so the plot keeps its size;
  //  - the title is wrapped at word boundaries to the chart's width, from the top edge down, and the top
  //    margin holds every line (the plot starts below the last); long axis titles wrap as well;
  //  - on a phone the mode bar, drawn over the title once tapped, is left out.
  var NARROW = 560;
  var LEGEND_FONT = 11, LEGEND_ROW = 19, LEGEND_ITEM = 45, TITLE_FONT = 14;
  var BREAK = /<br\s*\/?>/i;

  function plain(text) { return String(text || "").replace(/<[^>]*>/g, "").replace(/&[a-z#0-9]+;/gi, "x"); }

  // Words packed into lines of at most `chars` characters (a longer word keeps a line of its own).
  function pack(text, chars) {
    var lines = [], line = "";
    String(text).split(/\s+/).forEach(function (word) {
      if (!word) { return; }
      if (line && plain(line + " " + word).length > chars) { lines.push(line); line = word; }
      else { line = line ? line + " " + word : word; }
    });
    if (line) { lines.push(line); }
    return lines;
  }

  // A title's text with each of its lines wrapped; a line wholly inside one tag (<sup>, <span ...>) keeps the tag on each piece.
  function wrapTitle(text, chars) {
    var out = [];
    String(text).split(BREAK).forEach(function (part) {
      var tagged = part.match(/^<(\w+)([^>]*)>([\s\S]*)<\/\1>$/);
      if (tagged && !/</.test(tagged[3])) {
        var small = tagged[1] === "sup" || tagged[1] === "sub" || /font-size/.test(tagged[2]);
        pack(tagged[3], small ? Math.round(chars * 1.3) : chars).forEach(function (piece) {
          out.push("<" + tagged[1] + tagged[2] + ">" + piece + "</" + tagged[1] + ">");
        });
      } else if (/</.test(part)) { out.push(part); } else { out = out.concat(pack(part, chars)); }
    });
    return out.join("<br>");
  }

  function shownInLegend(traces, layout) {
    if (layout.showlegend === false) { return []; }
    var named = traces.filter(function (t) { return t.showlegend !== false && t.name !== undefined && t.name !== ""; });
    return (named.length > 1 || layout.showlegend === true) ? named : [];
  }

  // The legend's height in px when its entries are packed into rows `width` px wide (text at ~0.62 em a character).
  function legendHeight(entries, width) {
    var rows = 0, used = width;
    entries.forEach(function (t) {
      var lines = String(t.name).split(BREAK);
      var chars = Math.max.apply(null, lines.map(function (l) { return plain(l).length; }));
      var w = LEGEND_ITEM + chars * LEGEND_FONT * 0.62;
      if (used + w > width) { rows += lines.length; used = w; } else { used += w; }
    });
    return rows * LEGEND_ROW + 12;
  }

  function fitted(el, layout, traces) {
    var width = el.clientWidth;
    if (!width || width >= NARROW) { return layout; }
    var out = Object.assign({}, layout);
    var title = layout.title && typeof layout.title === "object" ? layout.title : { text: layout.title || "" };
    var grow = 0;
    if (title.text) {
      var text = wrapTitle(title.text, Math.max(16, Math.floor((width - 24) / (TITLE_FONT * 0.6))));
      var lines = text.split(BREAK).length;
      out.title = Object.assign({}, title, {
        text: text, font: Object.assign({}, title.font || {}, { size: TITLE_FONT }),
        x: 0, xref: "container", xanchor: "left", y: 1, yref: "container", yanchor: "top",
        // plotly centres a multi-line title on its anchor line: each further line moves the first up by half a line
        pad: { l: 8, t: 10 + Math.ceil((lines - 1) * 0.65 * TITLE_FONT) },
      });
      // a subtitle (a smaller line plotly sets under the title) wraps the same way
      var sub = title.subtitle && title.subtitle.text ? title.subtitle : null, subLines = 0;
      if (sub) {
        var subSize = (sub.font && sub.font.size) || 12;
        var subText = wrapTitle(sub.text, Math.max(16, Math.floor((width - 24) / (subSize * 0.6))));
        subLines = subText.split(BREAK).length;
        out.title.subtitle = Object.assign({}, sub, { text: subText });
      }
      // room for every line, set here: plotly's automargin shifts a multi-line, top-anchored title up out of the figure
      var top = 14 + lines * 19 + (subLines ? 6 + subLines * 17 : 0) + 12;
      out.margin = Object.assign({}, layout.margin || {}, { t: Math.max((layout.margin || {}).t || 0, top) });
      grow += Math.max(0, top - ((layout.margin || {}).t || 48));
    }
    // axis titles wrap too: the x axis' to the plot's width, a y axis' (turned on its side) to the plot's height
    var plotWidth = width - ((out.margin || {}).l || 60) - ((out.margin || {}).r || 10);
    var plotHeight = (layout.height || 340) - ((out.margin || {}).t || 48) - ((out.margin || {}).b || 50) - 20;
    Object.keys(layout).forEach(function (key) {
      var axis = layout[key], match = /^([xy])axis\d*$/.exec(key);
      if (!match || !axis || !axis.title || !axis.title.text) { return; }
      var size = (axis.title.font && axis.title.font.size) || (layout.font && layout.font.size) || 12;
      var chars = Math.max(12, Math.floor((match[1] === "x" ? plotWidth : plotHeight) / (size * 0.62)));
      out[key] = Object.assign({}, axis, { title: Object.assign({}, axis.title, { text: wrapTitle(axis.title.text, chars) }) });
    });
    var entries = shownInLegend(traces, layout);
    if (entries.length) {
      var margin = out.margin || {};
      var height = legendHeight(entries, width - (margin.l || 60) - (margin.r || 10));
      out.legend = Object.assign({}, layout.legend || {}, {
        orientation: "h", traceorder: "normal", x: 0, xanchor: "left", xref: "paper", y: 0, yanchor: "bottom", yref: "container",
        font: { size: LEGEND_FONT }, maxheight: 2000, tracegroupgap: 0,
      });
      grow += height + 8;
    }
    out.height = (layout.height || 340) + grow;
    return out;
  }

  // No mode bar on a phone (a narrow window, or a screen without hover): a tap leaves it over the title.
  // A narrow chart on a desktop keeps it (it shows while the pointer is over the chart).
  function config(el) {
    var phone = window.innerWidth < NARROW || (window.matchMedia && window.matchMedia("(hover: none)").matches);
    return phone && el.clientWidth && el.clientWidth < NARROW ? Object.assign({}, CONFIG, { displayModeBar: false }) : CONFIG;
  }

  function draw(el, figure) {
    if (!el || !figure) { return; }
    if (typeof Plotly === "undefined") { failed(el); return; }
    el.setAttribute("aria-busy", "true");
    var layout = fitted(el, figure.layout || {}, figure.data || []);
    el._marketFigure = figure;
    el._marketNarrow = el.clientWidth > 0 && el.clientWidth < NARROW;
    // The element is as tall as the figure: plotly's responsive resize (a rotated phone, a wider window)
    // drops layout.height and sizes the figure to its element, which would otherwise clip it to the CSS minimum.
    if (layout.height) { el.style.height = layout.height + "px"; }
    Plotly.react(el, figure.data || [], layout, config(el)).then(
      function () { el.removeAttribute("aria-busy"); el.classList.remove("chart-failed"); },
      function () { failed(el); }
    );
  }

  window.MarketCharts = { draw: draw, failed: failed };

  // A phone turned sideways (or a window resized) across the narrow width: draw each chart again in the other layout.
  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      document.querySelectorAll(".js-plotly-plot").forEach(function (el) {
        if (el._marketFigure && el.clientWidth && (el.clientWidth < NARROW) !== el._marketNarrow) { draw(el, el._marketFigure); }
      });
    }, 250);
  });

  // Static figures: <div data-figure="script-id"> with the figure in a json_script element.
  document.querySelectorAll("[data-figure]").forEach(function (el) {
    var source = document.getElementById(el.dataset.figure);
    if (source) { draw(el, JSON.parse(source.textContent)); }
  });
})();
