/* Tables on a phone (issue 23, item 14): every cell of a table with more than four columns is
   labelled with its column's heading (data-label) and the table gets the class "stacked": the
   stylesheet shows each row as a card of "heading: value" lines below 560 px, so no column is
   hidden off screen. Tables redrawn by a poller are labelled again (MarketTables.label). */
(function () {
  "use strict";
  function label(table) {
    var heads = Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) { return th.textContent.replace(/\s+/g, " ").trim(); });
    if (heads.length <= 4 || table.classList.contains("work-table")) { return; }
    table.classList.add("stacked");
    table.querySelectorAll("tbody tr").forEach(function (tr) {
      Array.prototype.forEach.call(tr.children, function (cell, k) {
        if (heads[k] && !cell.hasAttribute("colspan")) { cell.setAttribute("data-label", heads[k]); }
      });
    });
  }
  function labelAll(root) { (root || document).querySelectorAll("table.table").forEach(label); }
  window.MarketTables = { label: labelAll };
  labelAll(document);
})();
