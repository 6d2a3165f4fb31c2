// Sparrow dashboard: fetch the live part of the page every few seconds and swap it in.
// No library; the server renders everything (HTML and SVG), this only refreshes it.
"use strict";

(function () {
  const body = document.body;
  const period = Number(body.dataset.refreshMs) || 1000;
  const live = document.getElementById("live");
  const connection = document.getElementById("connection");
  let lastOk = Date.now();

  function show(state, text) {
    connection.className = "connection " + state;
    connection.textContent = text;
  }

  async function refresh() {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), 5000);
    try {
      const response = await fetch("live", { cache: "no-store", signal: abort.signal });
      if (!response.ok) throw new Error("HTTP " + response.status);
      live.innerHTML = await response.text();
      lastOk = Date.now();
      show("live", "live");
    } catch (err) {
      const seconds = Math.round((Date.now() - lastOk) / 1000);
      show("offline", "scheduler unreachable for " + seconds + " s, retrying");
    } finally {
      clearTimeout(timer);
      setTimeout(refresh, period);
    }
  }

  setTimeout(refresh, period);
})();
