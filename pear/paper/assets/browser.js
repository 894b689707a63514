
(function () {
  var D = window.PEAR_DEBATES, cols = D.columns, rows = D.rows, per = 100, page = 0;
  var c = {}; cols.forEach(function (n, i) { c[n] = i; });
  function $(id) { return document.getElementById(id); }
  function options(sel, values) {
    values.forEach(function (v, i) {
      var o = document.createElement("option"); o.value = String(i); o.textContent = v;
      sel.appendChild(o);
    });
  }
  options($("f-dataset"), D.datasets); options($("f-method"), D.methods);
  options($("f-model"), D.models);
  D.seeds.forEach(function (s) {
    var o = document.createElement("option"); o.value = String(s); o.textContent = s;
    $("f-seed").appendChild(o);
  });
  function want(id) { var v = $(id).value; return v === "" ? null : Number(v); }
  function filtered() {
    var ds = want("f-dataset"), me = want("f-method"), mo = want("f-model"),
        se = want("f-seed"), co = $("f-correct").value,
        q = $("f-text").value.trim().toLowerCase(),
        mw = $("f-minority").checked, ml = $("f-majority").checked,
        st = $("f-stopped").checked, pg = $("f-page").checked;
    return rows.filter(function (r) {
      return (ds === null || r[c.dataset] === ds) && (me === null || r[c.method] === me) &&
        (mo === null || r[c.model] === mo) && (se === null || r[c.seed] === se) &&
        (co === "" || r[c.correct] === Number(co)) && (!mw || r[c.minority_won]) &&
        (!ml || r[c.majority_lost]) && (!st || r[c.stopped_early]) && (!pg || r[c.page]) &&
        (q === "" || found(r, q));
    });
  }
  function found(r, q) {
    return [r[c.debate_id], r[c.question_id], r[c.question_text]].some(function (t) {
      return t.toLowerCase().indexOf(q) >= 0;
    });
  }
  function cell(tr, text, cls) {
    var td = document.createElement("td"); td.textContent = text;
    if (cls) { td.className = cls; } tr.appendChild(td); return td;
  }
  function draw() {
    var hits = filtered(), body = $("rows"), pages = Math.max(1, Math.ceil(hits.length / per));
    page = Math.min(page, pages - 1);
    body.textContent = "";
    hits.slice(page * per, page * per + per).forEach(function (r) {
      var tr = document.createElement("tr"), id = r[c.debate_id], td = cell(tr, "");
      if (r[c.page]) {
        var a = document.createElement("a"); a.href = "d/" + r[c.page]; a.textContent = id;
        td.appendChild(a);
      } else {
        td.textContent = id; td.title = "no page written: " + D.command.replace("ID", id);
        td.className = "muted";
      }
      cell(tr, D.models[r[c.model]]); cell(tr, D.datasets[r[c.dataset]]);
      cell(tr, D.methods[r[c.method]]); cell(tr, String(r[c.seed]), "num");
      cell(tr, r[c.question_id]); cell(tr, r[c.question_text], "q-text");
      cell(tr, r[c.correct] ? "\u2713" : "\u2717", r[c.correct] ? "ok" : "bad");
      cell(tr, r[c.final]); cell(tr, r[c.gold]); cell(tr, String(r[c.rounds]), "num");
      cell(tr, [r[c.minority_won] ? "minority-correct won" : "",
                r[c.majority_lost] ? "majority-correct lost" : "",
                r[c.stopped_early] ? "stopped early" : ""].filter(Boolean).join(", "));
      cell(tr, String(r[c.tokens]), "num");
      body.appendChild(tr);
    });
    $("count").textContent = hits.length + " of " + rows.length + " debates; page " +
      (page + 1) + " of " + pages;
    $("prev").disabled = page === 0; $("next").disabled = page >= pages - 1;
  }
  ["f-dataset", "f-method", "f-model", "f-seed", "f-correct", "f-minority", "f-majority",
   "f-stopped", "f-page", "f-text"].forEach(function (id) {
    $(id).addEventListener("input", function () { page = 0; draw(); });
  });
  $("prev").addEventListener("click", function () { page -= 1; draw(); });
  $("next").addEventListener("click", function () { page += 1; draw(); });
  draw();
})();
