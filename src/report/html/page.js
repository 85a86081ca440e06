"use strict";
(function () {
  // Sortable tables: click (or Enter on) a header; numbers sort by data-v.
  function key(row, col, numeric) {
    var cell = row.cells[col];
    var v = cell ? cell.getAttribute("data-v") : null;
    if (v === null) { v = cell ? cell.textContent : ""; }
    if (numeric) {
      var n = parseFloat(v);
      return isNaN(n) ? -Infinity : n;
    }
    return v.toLowerCase();
  }
  function sortBy(table, th) {
    var col = th.cellIndex;
    var numeric = th.getAttribute("data-kind") === "n";
    var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) { heads[i].removeAttribute("aria-sort"); }
    th.setAttribute("aria-sort", dir);
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var sign = dir === "ascending" ? 1 : -1;
    rows.forEach(function (r, i) { r._i = i; });
    rows.sort(function (a, b) {
      var x = key(a, col, numeric), y = key(b, col, numeric);
      if (x < y) { return -sign; }
      if (x > y) { return sign; }
      return a._i - b._i;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  function filter(section) {
    var table = section.querySelector("table.results");
    if (!table) { return; }
    var text = section.querySelector(".filter-text").value.toLowerCase();
    var status = section.querySelector(".filter-status").value;
    var mode = section.querySelector(".filter-mode").value;
    var rows = table.tBodies[0].rows, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      var ok = (!text || r.textContent.toLowerCase().indexOf(text) >= 0) &&
        (!status || r.getAttribute("data-status") === status) &&
        (!mode || r.getAttribute("data-mode") === mode);
      r.hidden = !ok;
      if (ok) { shown++; }
    }
    section.querySelector(".shown").textContent = shown + " of " + rows.length + " rows";
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.addEventListener("click", function () { sortBy(table, th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(table, th); } });
    });
  });
  document.querySelectorAll("section.run").forEach(function (section) {
    var run = function () { filter(section); };
    ["filter-text", "filter-status", "filter-mode"].forEach(function (c) {
      var el = section.querySelector("." + c);
      if (el) { el.addEventListener("input", run); el.addEventListener("change", run); }
    });
    run();
  });
  // Copy buttons: select the commands; copy where the browser allows it.
  document.querySelectorAll(".copy-btn").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var pre = btn.parentNode.querySelector("pre");
      var range = document.createRange();
      range.selectNodeContents(pre);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      try { document.execCommand("copy"); btn.textContent = "copied"; } catch (e) { btn.textContent = "selected"; }
    });
  });
})();
