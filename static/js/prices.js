// Price page: while a feed refresh runs, poll its progress and redraw the bars; reload when done.
(function () {
  "use strict";
  var table = document.querySelector("[data-testid=feed-status]");
  if (!table) { return; }
  var url = table.getAttribute("data-status-url");
  var sawRunning = table.querySelector("progress") !== null;

  function draw(feed) {
    var row = table.querySelector('tr[data-feed="' + feed.feed + '"]');
    var run = feed.last_run;
    if (!row || !run) { return; }
    row.querySelector(".status").textContent = run.status + (run.accepted || run.rejected ? ": " + run.accepted + " accepted, " + run.rejected + " rejected" : "");
    var detail = row.querySelector(".detail");
    if (run.status === "running") {
      var p = run.progress || {};
      var bar = detail.querySelector("progress") || detail.insertBefore(document.createElement("progress"), detail.firstChild);
      if (p.total) { bar.max = p.total; bar.value = p.done; } else { bar.removeAttribute("value"); }
      var note = detail.querySelector(".note") || detail.appendChild(document.createElement("span"));
      note.className = "note";
      note.textContent = " " + (p.note || "running…");
    }
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (!data) { return; }
        data.feeds.forEach(draw);
        if (data.running) { sawRunning = true; window.setTimeout(poll, 2000); }
        else if (sawRunning) { window.location.reload(); }
      })
      .catch(function () { window.setTimeout(poll, 5000); });
  }

  if (sawRunning || window.location.hash === "#feeds") { poll(); }
})();
