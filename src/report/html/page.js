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
    // A sorted results table is one flat list: the stage rows step aside.
    if (table.classList.contains("grouped")) { table.setAttribute("data-flat", "1"); }
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
    var section = table.closest("section.run");
    if (section) { apply(section); }
  }
  // The results table: one summary row per stage, its rows shown when the
  // stage is expanded; a filter or a sort shows every matching row instead.
  function apply(section) {
    var table = section.querySelector("table.results");
    if (!table) { return; }
    var text = section.querySelector(".filter-text").value.toLowerCase();
    var status = section.querySelector(".filter-status").value;
    var mode = section.querySelector(".filter-mode").value;
    var flat = !!(text || status || mode) || table.getAttribute("data-flat") === "1";
    var rows = table.tBodies[0].rows, open = {}, shown = 0, total = 0, stages = 0, i, r;
    for (i = 0; i < rows.length; i++) {
      r = rows[i];
      if (r.classList.contains("stage-sum")) {
        open[r.getAttribute("data-group")] = r.getAttribute("aria-expanded") === "true";
        r.hidden = flat;
        stages++;
      }
    }
    for (i = 0; i < rows.length; i++) {
      r = rows[i];
      if (r.classList.contains("stage-sum")) { continue; }
      total++;
      var ok = (!text || r.textContent.toLowerCase().indexOf(text) >= 0) &&
        (!status || r.getAttribute("data-status") === status) &&
        (!mode || r.getAttribute("data-mode") === mode);
      r.hidden = !(ok && (flat || open[r.getAttribute("data-group")]));
      if (!r.hidden) { shown++; }
    }
    section.querySelector(".shown").textContent = flat ?
      shown + " of " + total + " rows" :
      stages + " stages (click one for its rows); " + shown + " of " + total + " rows shown";
  }
  function regroup(section) {
    var table = section.querySelector("table.results");
    table.removeAttribute("data-flat");
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) { heads[i].removeAttribute("aria-sort"); }
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) { return a.getAttribute("data-order") - b.getAttribute("data-order"); });
    rows.forEach(function (r) { body.appendChild(r); });
    ["filter-text", "filter-status", "filter-mode"].forEach(function (c) { section.querySelector("." + c).value = ""; });
    apply(section);
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.addEventListener("click", function () { sortBy(table, th); });
      th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sortBy(table, th); } });
    });
  });
  document.querySelectorAll("section.run").forEach(function (section) {
    var run = function () { apply(section); };
    ["filter-text", "filter-status", "filter-mode"].forEach(function (c) {
      var el = section.querySelector("." + c);
      if (el) { el.addEventListener("input", run); el.addEventListener("change", run); }
    });
    var table = section.querySelector("table.results");
    if (table) {
      table.tBodies[0].addEventListener("click", function (e) {
        var r = e.target.closest("tr.stage-sum");
        if (!r) { return; }
        var open = r.getAttribute("aria-expanded") !== "true";
        r.setAttribute("aria-expanded", open ? "true" : "false");
        apply(section);
      });
      section.querySelector(".expand-all").addEventListener("click", function () {
        table.querySelectorAll("tr.stage-sum").forEach(function (r) { r.setAttribute("aria-expanded", "true"); });
        apply(section);
      });
      section.querySelector(".regroup").addEventListener("click", function () {
        table.querySelectorAll("tr.stage-sum").forEach(function (r) { r.setAttribute("aria-expanded", "false"); });
        regroup(section);
      });
    }
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
