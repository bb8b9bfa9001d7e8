// Live updates: the server says "changed" (at most once a second); the
// page then fetches itself again and swaps its main content, keeping the
// groups the reader opened open.
(function () {
  "use strict";
  var indicator = document.getElementById("live");
  function state(on) {
    indicator.textContent = on ? "live" : "offline";
    indicator.className = "live " + (on ? "on" : "off");
  }
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
        if (focused) {
          var el = document.getElementById(focused);
          if (el) { el.value = value; el.focus(); }
        }
        document.body.dataset.stamp = doc.body.dataset.stamp;
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }
  var es = new EventSource("/events");
  es.addEventListener("hello", function (e) {
    state(true);
    if (e.data !== document.body.dataset.stamp) { refresh(); }
  });
  es.addEventListener("changed", function () { refresh(); });
  // The stream ends with the session, and then cannot reconnect: refresh
  // to find out whether the session is gone (the login page) or only the
  // connection.
  es.onerror = function () { state(false); refresh(); };
})();
