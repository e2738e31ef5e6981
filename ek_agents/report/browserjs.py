"""The trial browser's script and styles (:mod:`ek_agents.report.trialbrowser` embeds them).

Vanilla JavaScript, no library, nothing loaded: it reads the page's JSON data block
(``<script type="application/json" id="ek-trials">``), builds each run's trial table, its
filters and sort, a trial's trajectory when its row is clicked, and the per-task comparison of
two runs. Every value reaches the page through ``textContent`` (never ``innerHTML``), so
markup in a task id, an output or an argument stays text. The page's Content-Security-Policy
allows this script by its sha256 and nothing else.
"""
from __future__ import annotations

__all__ = ["SCRIPT", "STYLE"]

STYLE = """
.tb-controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:6px 0}
.tb-controls input[type=search]{width:220px}
table.trials td,table.trials th{white-space:nowrap}table.trials th{cursor:pointer;user-select:none}
table.trials tr.trial-row{cursor:pointer}table.trials tr.trial-row:hover{background:#f6f9ff}
table.trials tr.open{background:#eef3ff}td.detail-cell{text-align:left;white-space:normal;background:#fbfbfb}
.tb-pair{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.tb-pair pre,.tb-pre{white-space:pre-wrap;word-break:break-word;max-height:360px;overflow:auto;
background:#f7f7f7;border:1px solid #e2e2e2;padding:6px;margin:4px 0;font-size:12px;text-align:left}
table.steps td,table.calls td{text-align:left;vertical-align:top;white-space:normal;font-size:12px}
table.steps td pre{margin:0;white-space:pre-wrap;word-break:break-word;max-height:200px;overflow:auto}
.diff-del{background:#ffe9e9;color:#8a1020}.diff-ins{background:#e6ffec;color:#05732d}
.diff-eq{color:#555}.tb-more{margin:6px 0}.worse{background:#fff1f1}.better{background:#f0fff3}
.step-error{color:#b00020}.tb-omitted{color:#555}
"""

SCRIPT = r"""
(function(){
"use strict";
var DATA = JSON.parse(document.getElementById("ek-trials").textContent);
var PAGE = DATA.page;
function el(tag, attrs, text){
  var e = document.createElement(tag);
  if (attrs) for (var k in attrs) { if (k === "cls") e.className = attrs[k]; else e.setAttribute(k, attrs[k]); }
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function money(x){  // as the report's fmt_dollars: cents from $1, else three significant digits
  if (x === null || x === undefined) return "unknown";
  if (x === 0) return "$0.00";
  var sign = x < 0 ? "-" : "", v = Math.abs(x);
  if (v >= 1) return sign + "$" + v.toLocaleString("en-US", {minimumFractionDigits: 2, maximumFractionDigits: 2});
  var t = v.toFixed(2 - Math.floor(Math.log10(v))).replace(/0+$/, "").split(".");
  return sign + "$" + t[0] + "." + (t[1] + "00").slice(0, Math.max(2, t[1].length));
}
function secs(x){ if (x === null || x === undefined) return "n/a"; return x < 1 ? Math.round(x*1000) + " ms" : x.toFixed(2) + " s"; }
function yesno(x){ return x === null || x === undefined ? "" : (x ? "pass" : "fail"); }
function pct(c, n){ return n ? (100*c/n).toFixed(1) + "%" : "n/a"; }
var COLS = [["task",0],["slice",1],["trial",2],["success",3],["judge",4],["label",5],["dollars",6],
            ["tokens",7],["latency",8],["error",9],["limit hit",10],["model",11]];
function cmpv(a, b){
  if (a === b) return 0; if (a === null || a === undefined) return 1; if (b === null || b === undefined) return -1;
  return a < b ? -1 : 1;
}
function Browser(root, run, ri){
  this.root = root; this.run = run; this.ri = ri; this.shown = PAGE;
  this.sort = {col: 3, dir: 1}; this.open = {};
  var self = this, c = el("div", {cls: "tb-controls"});
  this.q = el("input", {type: "search", placeholder: "task contains", "data-role": "task"});
  this.exact = null;
  this.slice = el("select", {"data-role": "slice"}); this.model = el("select", {"data-role": "model"});
  this.fails = el("input", {type: "checkbox", "data-role": "failures"});
  [["slice", this.slice, run.slices], ["model", this.model, run.models]].forEach(function(s){
    s[1].appendChild(el("option", {value: ""}, "every " + s[0]));
    s[2].forEach(function(v){ s[1].appendChild(el("option", {value: v}, v)); });
  });
  var fl = el("label"); fl.appendChild(this.fails); fl.appendChild(document.createTextNode(" failures only"));
  c.appendChild(this.q); c.appendChild(this.slice); c.appendChild(this.model); c.appendChild(fl);
  this.count = el("span", {cls: "note", "data-role": "count"}); c.appendChild(this.count);
  root.appendChild(c);
  var wrap = el("div", {cls: "scroll"});
  this.table = el("table", {cls: "trials", "data-run": run.id});
  var tr = el("tr");
  COLS.forEach(function(col){
    var th = el("th", {"data-col": col[1]}, col[0]);
    th.addEventListener("click", function(){
      self.sort = {col: col[1], dir: self.sort.col === col[1] ? -self.sort.dir : 1}; self.render();
    });
    tr.appendChild(th);
  });
  var thead = el("thead"); thead.appendChild(tr); this.table.appendChild(thead);
  this.tbody = el("tbody"); this.table.appendChild(this.tbody);
  wrap.appendChild(this.table); root.appendChild(wrap);
  this.more = el("button", {cls: "tb-more", type: "button"}, "show more");
  this.more.addEventListener("click", function(){ self.shown += PAGE; self.render(); });
  root.appendChild(this.more);
  if (run.omitted) root.appendChild(el("p", {cls: "note tb-omitted"}, run.omitted));
  [this.q, this.slice, this.model, this.fails].forEach(function(x){
    x.addEventListener(x.tagName === "INPUT" && x.type === "search" ? "input" : "change",
      function(){ self.exact = null; self.shown = PAGE; self.render(); });
  });
  this.render();
}
Browser.prototype.rows = function(){
  var q = this.q.value.toLowerCase(), sl = this.slice.value, mo = this.model.value,
      fo = this.fails.checked, ex = this.exact, out = [];
  var t = this.run.trials;
  for (var i = 0; i < t.length; i++) {
    var r = t[i];
    if (ex !== null && r[0] !== ex) continue;
    if (q && r[0].toLowerCase().indexOf(q) < 0) continue;
    if (sl && r[1] !== sl) continue;
    if (mo && r[11] !== mo) continue;
    if (fo && r[3]) continue;
    out.push(i);
  }
  var s = this.sort;
  out.sort(function(a, b){
    var x = t[a], y = t[b], c = cmpv(x[s.col], y[s.col]) * s.dir;
    return c || cmpv(x[0], y[0]) || (x[2] - y[2]);
  });
  return out;
};
Browser.prototype.render = function(){
  var self = this, idx = this.rows(), t = this.run.trials;
  while (this.tbody.firstChild) this.tbody.removeChild(this.tbody.firstChild);
  idx.slice(0, this.shown).forEach(function(i){
    var r = t[i], tr = el("tr", {cls: "trial-row", "data-trial": i, "data-task": r[0],
                                 "data-success": r[3] ? "1" : "0"});
    var cells = [r[0], r[1] || "", r[2], yesno(r[3]), yesno(r[4]), yesno(r[5]), money(r[6]),
                 r[7].toLocaleString("en-US"), secs(r[8]), r[9] || "", r[10] || "", r[11] || ""];
    cells.forEach(function(v, j){
      var td = el("td", null, v); if (j === 3) td.className = r[3] ? "pass" : "fail"; tr.appendChild(td);
    });
    tr.addEventListener("click", function(){ self.toggle(i, tr); });
    self.tbody.appendChild(tr);
    if (self.open[i]) self.toggle(i, tr, true);
  });
  this.count.textContent = idx.length.toLocaleString("en-US") + " of " +
    t.length.toLocaleString("en-US") + " trials shown" + (this.exact !== null ? " (task " + this.exact + ")" : "");
  this.more.style.display = idx.length > this.shown ? "" : "none";
};
Browser.prototype.toggle = function(i, tr, keep){
  var next = tr.nextSibling;
  if (!keep && next && next.classList && next.classList.contains("detail")) {
    this.tbody.removeChild(next); tr.classList.remove("open"); delete this.open[i]; return;
  }
  this.open[i] = true; tr.classList.add("open");
  var d = el("tr", {cls: "detail", "data-trial": i}), td = el("td", {cls: "detail-cell", colspan: COLS.length});
  td.appendChild(detail(this.run, i)); d.appendChild(td);
  this.tbody.insertBefore(d, tr.nextSibling);
};
function pre(text, cls){ return el("pre", {cls: cls || "tb-pre"}, text === null || text === undefined ? "(none)" : text); }
function detail(run, i){
  var r = run.trials[i], dt = run.details[i], box = el("div", {cls: "trial-detail"});
  box.appendChild(el("h4", null, "Task " + r[0] + ", trial " + r[2] + ": " + (r[3] ? "success" : "failure")));
  if (!dt) { box.appendChild(el("p", {cls: "note"}, "trajectory not kept (see the note under the table)")); return box; }
  if (dt.error) box.appendChild(el("p", {cls: "fail"}, "error: " + dt.error));
  box.appendChild(el("h5", null, "Tool calls (" + dt.steps.length + (dt.steps_more ? ", " + dt.steps_more + " more not shown" : "") + ")"));
  var st = el("table", {cls: "steps"}), h = el("tr");
  ["#", "tool", "arguments", "result or error"].forEach(function(x){ h.appendChild(el("th", null, x)); });
  st.appendChild(h);
  dt.steps.forEach(function(s, k){
    var tr = el("tr", {cls: "step"}); tr.appendChild(el("td", null, k)); tr.appendChild(el("td", {cls: "tool"}, s[0]));
    var a = el("td", {cls: "args"}); a.appendChild(pre(s[1], "x")); tr.appendChild(a);
    var o = el("td", {cls: s[3] ? "result step-error" : "result"}); o.appendChild(pre(s[3] ? "error: " + s[3] : s[2], "x"));
    tr.appendChild(o); st.appendChild(tr);
  });
  box.appendChild(st);
  box.appendChild(el("h5", null, "Model calls (" + dt.calls.length + ")"));
  var ct = el("table", {cls: "calls"}), ch = el("tr");
  ["#", "model", "input tokens", "cached", "output tokens", "reasoning", "dollars", "recorded"].forEach(function(x){ ch.appendChild(el("th", null, x)); });
  ct.appendChild(ch);
  dt.calls.forEach(function(c, k){
    var tr = el("tr", {cls: "call"});
    [k, c[0], c[1], c[2], c[3], c[4], money(c[5]), c[6] ? "per call" : "one tally for the trial"].forEach(function(v){ tr.appendChild(el("td", null, v)); });
    ct.appendChild(tr);
  });
  box.appendChild(ct);
  var pair = el("div", {cls: "tb-pair"}), left = el("div", {cls: "output"}), right = el("div", {cls: "gold"});
  left.appendChild(el("h5", null, "Output")); left.appendChild(pre(dt.output));
  left.appendChild(el("h5", null, "Final state")); left.appendChild(pre(dt.final_state));
  right.appendChild(el("h5", null, "Gold")); right.appendChild(pre(run.gold[r[0]]));
  pair.appendChild(left); pair.appendChild(right); box.appendChild(pair);
  if (dt.diff) {
    box.appendChild(el("h5", null, "Tool calls against the gold's (- expected, + made)"));
    var dp = el("pre", {cls: "tb-pre diff"});
    dt.diff.forEach(function(d){
      var cls = d[0] === "-" ? "diff-del" : d[0] === "+" ? "diff-ins" : "diff-eq";
      dp.appendChild(el("span", {cls: cls}, d[0] + " " + d[1] + "\n"));
    });
    box.appendChild(dp);
  }
  if (dt.meta) { box.appendChild(el("h5", null, "Meta")); box.appendChild(pre(dt.meta)); }
  return box;
}
var browsers = [];
DATA.runs.forEach(function(run, ri){
  var root = document.getElementById("trials-" + ri);
  if (root) browsers.push(new Browser(root, run, ri));
});
function Compare(root){
  var self = this, c = el("div", {cls: "tb-controls"});
  this.a = el("select", {"data-role": "base"}); this.b = el("select", {"data-role": "other"});
  DATA.runs.forEach(function(run, i){
    self.a.appendChild(el("option", {value: i}, run.id)); self.b.appendChild(el("option", {value: i}, run.id));
  });
  var pair = DATA.compare;
  this.a.value = pair[0]; this.b.value = pair[1];
  c.appendChild(document.createTextNode("base ")); c.appendChild(this.a);
  c.appendChild(document.createTextNode(" against ")); c.appendChild(this.b);
  root.appendChild(c);
  this.note = el("p", {cls: "note"}); root.appendChild(this.note);
  this.table = el("table", {cls: "compare"}); root.appendChild(this.table);
  [this.a, this.b].forEach(function(s){ s.addEventListener("change", function(){ self.render(); }); });
  this.render();
}
Compare.prototype.render = function(){
  var A = DATA.runs[+this.a.value], B = DATA.runs[+this.b.value], t = this.table;
  while (t.firstChild) t.removeChild(t.firstChild);
  var h = el("tr");
  ["task", "slice", "success " + A.id, "success " + B.id, "change", "dollars " + A.id, "dollars " + B.id, ""].forEach(function(x){ h.appendChild(el("th", null, x)); });
  t.appendChild(h);
  if (A.suite !== B.suite) { this.note.textContent = "Runs of different suites: not compared."; return; }
  var rows = [];
  Object.keys(B.tasks).forEach(function(k){
    var a = A.tasks[k], b = B.tasks[k]; if (!a) return;
    rows.push([k, b[0], a, b, (b[1] ? b[2] / b[1] : 0) - (a[1] ? a[2] / a[1] : 0)]);
  });
  rows.sort(function(x, y){ return x[4] - y[4] || cmpv(x[0], y[0]); });
  var worse = rows.filter(function(r){ return r[4] < 0; }).length;
  this.note.textContent = worse + " of " + rows.length + " tasks got worse in " + B.id + " than in " + A.id + " (worst first).";
  rows.forEach(function(r){
    var tr = el("tr", {cls: r[4] < 0 ? "task-row worse" : r[4] > 0 ? "task-row better" : "task-row", "data-task": r[0]});
    [r[0], r[1] || "", pct(r[2][2], r[2][1]) + " (" + r[2][2] + "/" + r[2][1] + ")",
     pct(r[3][2], r[3][1]) + " (" + r[3][2] + "/" + r[3][1] + ")",
     (r[4] > 0 ? "+" : "") + (100 * r[4]).toFixed(1) + " pt", money(r[2][3]), money(r[3][3])].forEach(function(v){ tr.appendChild(el("td", null, v)); });
    var td = el("td"), btn = el("button", {type: "button", cls: "open-task", "data-task": r[0]}, "trials");
    btn.addEventListener("click", function(){ showTask(+document.querySelector("select[data-role=other]").value, r[0]);
                                              showTask(+document.querySelector("select[data-role=base]").value, r[0], true); });
    td.appendChild(btn); tr.appendChild(td); t.appendChild(tr);
  });
};
function showTask(ri, task, quiet){
  var b = browsers[ri]; if (!b) return;
  b.q.value = ""; b.slice.value = ""; b.model.value = ""; b.fails.checked = false; b.exact = task; b.shown = PAGE;
  b.render();
  if (!quiet) b.root.scrollIntoView();
}
var cmp = document.getElementById("trials-compare");
if (cmp && DATA.compare) new Compare(cmp);
document.body.setAttribute("data-trials-ready", "1");
if (window.performance && performance.mark) performance.mark("ek-trials-ready");
})();
"""
