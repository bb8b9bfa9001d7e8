// Live updates: the server says "changed" (at most once a second); the
// page then fetches itself again and swaps its main content, keeping the
// groups the reader opened open. The badge in the corner says whether the
// page is current: "live", "reconnecting since T" or "disconnected since
// T" (the dashboard lost NATS, as the server renders it), or "disconnected
// since T" when the page lost the dashboard itself.
(function () {
  "use strict";
  var indicator = document.getElementById("live");
  // Until the stream says hello the badge keeps the server's text.
  var streamUp = false, streamLostAt = null;
  function hhmmss(d) { return d.toISOString().slice(11, 19) + " UTC"; }
  function badge() {
    if (!streamUp) {
      indicator.textContent = "disconnected since " + hhmmss(streamLostAt || new Date());
      indicator.className = "live off";
      return;
    }
    var nats = indicator.dataset.nats || "live";
    indicator.textContent = indicator.dataset.badge || nats;
    indicator.className = "live " + (nats === "live" ? "on" : "lost");
  }
  // openTarget opens the group the URL's fragment names (#group-2) and
  // scrolls to it, so a link shows what it names.
  function openTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (!el) { return; }
    var d = el.tagName === "DETAILS" ? el : el.closest("details");
    if (d) { d.open = true; }
    el.scrollIntoView({ block: "start" });
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
  if (!window.EventSource) { return; }
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { headers: { "Accept": "text/html", "X-CCM-Live": "1" }, cache: "no-store" })
      .then(function (r) {
        // The session ended (idle, lifetime, logout): show the login page.
        if (r.redirected && new URL(r.url).pathname === "/login") {
          window.location.assign(r.url);
          return Promise.reject("logged out");
        }
        return r.ok ? r.text() : Promise.reject(r.status);
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        var main = document.getElementById("main");
        if (!fresh || !main) { return; }
        var open = {};
        main.querySelectorAll("details[open]").forEach(function (d) {
          if (d.id) { open[d.id] = true; }
        });
        var focused = document.activeElement && document.activeElement.id;
        var value = focused ? document.activeElement.value : null;
        main.replaceWith(fresh);
        fresh.querySelectorAll("details").forEach(function (d) {
          if (d.id && open[d.id]) { d.open = true; }
        });
        document.dispatchEvent(new CustomEvent("ccm:swapped"));
        if (focused) {
          var el = document.getElementById(focused);
          if (el) { if (value !== undefined && value !== null) { el.value = value; } el.focus(); }
        }
        document.body.dataset.stamp = doc.body.dataset.stamp;
        var fb = doc.getElementById("live");
        if (fb) {
          indicator.dataset.nats = fb.dataset.nats;
          indicator.dataset.badge = fb.dataset.badge;
          badge();
        }
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }
  var es = new EventSource("/events");
  es.addEventListener("hello", function (e) {
    streamUp = true;
    streamLostAt = null;
    badge();
    if (e.data !== document.body.dataset.stamp) { refresh(); }
  });
  es.addEventListener("changed", function () { refresh(); });
  // The stream ends with the session, and then cannot reconnect: refresh
  // to find out whether the session is gone (the login page) or only the
  // connection.
  es.onerror = function () {
    if (streamUp || !streamLostAt) { streamLostAt = new Date(); }
    streamUp = false;
    badge();
    refresh();
  };
})();
