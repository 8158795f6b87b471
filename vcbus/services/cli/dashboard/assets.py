"""The dashboard's stylesheet and script, served by the app itself (no CDN, no build step)."""

from __future__ import annotations

CSS = """
:root { --fg: #1d2430; --muted: #5b6472; --line: #d9dee6; --accent: #2f6fdb; --bg: #f6f8fb; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 1.5rem; align-items: center; padding: .6rem 1.2rem;
  background: #17202e; color: #fff; }
header a { color: #c9d6ea; text-decoration: none; margin-right: 1rem; }
header a.active { color: #fff; font-weight: 600; border-bottom: 2px solid #6ea1ff; }
.brand { font-size: 1.1rem; }
.live { margin-left: auto; font-size: .8rem; color: #9aa6b8; }
.live.on { color: #7ee2a8; }
main { padding: 1rem 1.2rem 3rem; max-width: 1200px; }
h1 { font-size: 1.4rem; margin: .2rem 0 1rem; }
h2 { font-size: 1.05rem; margin: 1.2rem 0 .5rem; }
section { background: #fff; border: 1px solid var(--line); border-radius: 6px;
  padding: .2rem 1rem .8rem; margin-bottom: 1rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line);
  vertical-align: top; }
th { font-weight: 600; color: var(--muted); font-size: .85rem; }
td.empty { color: var(--muted); }
a { color: var(--accent); }
.meter { display: flex; align-items: center; gap: .5rem; margin: .25rem 0; }
td .meter { min-width: 16rem; }
table.queues td .meter { min-width: 10rem; flex-wrap: wrap; gap: .1rem .5rem; }
table.queues .meter .label { flex: 0 0 3.6rem; }
table.queues .meter .bar { flex: 1 0 4.5rem; }
table.queues .meter .text { flex: 1 0 100%; white-space: normal; }
section { overflow-wrap: anywhere; }
.meter .label { flex: 0 0 4.5rem; color: var(--muted); }
.meter .bar { flex: 1 0 6rem; max-width: 22rem; height: .7rem; background: #e7ebf1;
  border-radius: 4px; overflow: hidden; }
.meter .fill { display: block; height: 100%; background: var(--accent); }
.meter .text { font-size: .85rem; color: var(--muted); white-space: nowrap; }
.counts { display: flex; flex-wrap: wrap; gap: .6rem; }
.count { text-decoration: none; border: 1px solid var(--line); border-radius: 4px;
  padding: .3rem .6rem; }
.phase { padding: .05rem .4rem; border-radius: 3px; background: #e7ebf1; font-size: .85rem; }
.phase-running, .phase-inqueue { background: #dbe8ff; }
.phase-completed, .phase-succeeded { background: #d9f2e3; }
.phase-pending { background: #fff1cc; }
.phase-failed, .phase-rejected, .phase-aborted { background: #fadcdc; }
.reason { font-weight: 600; }
.message { display: block; color: var(--muted); font-size: .85rem; }
.why .message { display: inline; }
.task { display: inline-block; margin-right: .5rem; font-family: ui-monospace, monospace;
  font-size: .85rem; }
.filters { display: flex; gap: 1rem; align-items: center; margin-bottom: .6rem; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: .8rem; }
.node { background: #fff; border: 1px solid var(--line); border-left: 6px solid #cfd6e0;
  border-radius: 6px; padding: .2rem .8rem .6rem; }
.node h3 { margin: .4rem 0; font-size: 1rem; }
.node .meter .label { flex: 0 0 4.2rem; }
.node .meter .bar { flex: 1 1 3rem; }
.node.level-1 { border-left-color: #9cc3ff; }
.node.level-2 { border-left-color: #5d9bff; }
.node.level-3 { border-left-color: #f0a93b; }
.node.level-4 { border-left-color: #e0524a; }
.node.locked { outline: 2px dashed #b04fd6; }
.lock { color: #8a2fb0; font-weight: 600; }
.cordon { color: #a33; }
.events td { font-size: .85rem; }
.event-warning { color: #a33; font-weight: 600; }
.admission, .gone { color: #a33; font-weight: 600; }
.legend { display: flex; flex-wrap: wrap; gap: .3rem 1rem; list-style: none; padding: 0;
  margin: .3rem 0 .8rem; font-size: .85rem; color: var(--muted); }
.swatch { display: inline-block; width: .9rem; height: .6rem; margin-right: .35rem;
  vertical-align: middle; }
.swatch.dashed { opacity: .5; }
.swatch.node-edge { width: .45rem; height: 1rem; background: #cfd6e0; }
.swatch.node-edge.level-1 { background: #9cc3ff; }
.swatch.node-edge.level-2 { background: #5d9bff; }
.swatch.node-edge.level-3 { background: #f0a93b; }
.swatch.node-edge.level-4 { background: #e0524a; }
.swatch.node-edge.locked { background: #fff; outline: 2px dashed #b04fd6; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; }
.chart { margin: .4rem 0; }
.chart figcaption { font-weight: 600; font-size: .9rem; margin-bottom: .2rem; }
.chart svg { max-width: 100%; height: auto; }
.nodata { color: var(--muted); }
time.ago { white-space: nowrap; }
th a.sort { color: inherit; text-decoration: none; }
.pager { margin: .6rem 0; display: flex; gap: 1rem; }
.deleted ul { margin: .3rem 0; padding-left: 1.2rem; }
"""

LIVE_JS = """
// Live updates: the server sends "change" over server-sent events; the page fetches
// itself again and swaps <main>. Without JavaScript the pages are the same, only static.
(() => {
  if (!window.EventSource || !window.fetch) return;
  const badge = document.getElementById("live");
  let busy = false;
  let again = false;
  async function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    try {
      const response = await fetch(location.href, { headers: { Accept: "text/html" } });
      if (response.ok) {
        const page = new DOMParser().parseFromString(await response.text(), "text/html");
        const fresh = page.getElementById("main");
        const main = document.getElementById("main");
        if (fresh && main) main.replaceWith(fresh);
      }
    } finally {
      busy = false;
      if (again) { again = false; refresh(); }
    }
  }
  // Relative times ("12s ago") stay current between updates, counted as kubectl does.
  function human(s) {
    if (s < 0) return "0s";
    s = Math.floor(s);
    if (s < 120) return s + "s";
    const m = Math.floor(s / 60);
    if (m < 10) return s % 60 ? m + "m" + (s % 60) + "s" : m + "m";
    if (m < 180) return m + "m";
    const h = Math.floor(m / 60);
    if (h < 8) return m % 60 ? h + "h" + (m % 60) + "m" : h + "h";
    if (h < 48) return h + "h";
    return Math.floor(h / 24) + "d";
  }
  function ages() {
    for (const t of document.querySelectorAll("time.ago")) {
      const at = Date.parse(t.getAttribute("datetime"));
      if (!isNaN(at)) t.textContent = human((Date.now() - at) / 1000) + " ago";
    }
  }
  setInterval(ages, 5000);
  const source = new EventSource("/events");
  source.addEventListener("change", refresh);
  source.onopen = () => { badge.textContent = "live"; badge.className = "live on"; };
  source.onerror = () => { badge.textContent = "reconnecting"; badge.className = "live"; };
})();
"""
