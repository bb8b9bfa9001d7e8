// Sortable tables: every column header of a table marked data-sortable
// becomes a button (so the keyboard reaches it) that sorts the table's rows
// by that column, ascending, then descending; the header says which with
// aria-sort. A cell's data-sort, when it has one, is its key (a time, a
// duration, a count), else its text; numbers compare as numbers. It sorts
// the rows the page holds, in the browser, and sorts them again the same
// way after a live update replaced the page's content.
(function () {
  "use strict";
  // sorted remembers each table's sort by its key: {col, dir}.
  var sorted = {};
  var number = /^-?\d+(\.\d+)?$/;
  function keyOf(table, i) { return table.id || "table" + i; }
  function cellKey(row, col) {
    var cell = row.cells[col];
    if (!cell) { return null; }
    var k = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
    return k === "-" ? "" : k;
  }
  function compare(a, b) {
    if (a === b) { return 0; }
    if (a === null || a === "") { return 1; }  // empty last, either way
    if (b === null || b === "") { return -1; }
    if (number.test(a) && number.test(b)) { return parseFloat(a) - parseFloat(b); }
    return a.localeCompare(b, undefined, { numeric: true });
  }
  function apply(table, key) {
    var s = sorted[key];
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    for (var h = 0; h < heads.length; h++) {
      var dir = s && s.col === h ? s.dir : "none";
      heads[h].setAttribute("aria-sort", dir);
      var arrow = heads[h].querySelector(".arrow");
      if (arrow) { arrow.textContent = dir === "ascending" ? "▲" : dir === "descending" ? "▼" : ""; }
    }
    if (!s) { return; }
    var body = table.tBodies[0];
    if (!body) { return; }
    var rows = Array.prototype.slice.call(body.rows).map(function (r, i) { return { r: r, i: i, k: cellKey(r, s.col) }; });
    var sign = s.dir === "descending" ? -1 : 1;
    rows.sort(function (x, y) {
      var xe = x.k === null || x.k === "", ye = y.k === null || y.k === "";
      if (xe !== ye) { return xe ? 1 : -1; }
      return sign * compare(x.k, y.k) || x.i - y.i;
    });
    rows.forEach(function (x) { body.appendChild(x.r); });
  }
  function enhance() {
    document.querySelectorAll("table[data-sortable]").forEach(function (table, i) {
      var key = keyOf(table, i);
      if (!table.tHead || !table.tHead.rows.length) { return; }
      var heads = table.tHead.rows[0].cells;
      for (var h = 0; h < heads.length; h++) {
        var th = heads[h];
        if (th.querySelector("button")) { continue; }
        var b = document.createElement("button");
        b.type = "button";
        b.id = "sort-" + key + "-" + h;
        b.dataset.col = String(h);
        b.title = "sort by " + th.textContent.trim();
        while (th.firstChild) { b.appendChild(th.firstChild); }
        var arrow = document.createElement("span");
        arrow.className = "arrow";
        arrow.setAttribute("aria-hidden", "true");
        b.appendChild(arrow);
        th.appendChild(b);
        b.addEventListener("click", function (e) {
          var col = Number(e.currentTarget.dataset.col);
          var s = sorted[key];
          sorted[key] = { col: col, dir: s && s.col === col && s.dir === "ascending" ? "descending" : "ascending" };
          apply(table, key);
        });
      }
      apply(table, key);
    });
  }
  document.addEventListener("ccm:swapped", enhance);
  enhance();
})();
