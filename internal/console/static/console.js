// The console works without scripts; this only refreshes parts marked data-refresh (live
// counters) every few seconds, replacing them with the same part of the page fetched again.
(function () {
  'use strict';
  document.querySelectorAll('[data-refresh]').forEach(function (el) {
    var every = parseInt(el.getAttribute('data-refresh'), 10) || 5000;
    setInterval(function () {
      fetch(window.location.href, { credentials: 'same-origin' })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) return;
          var fresh = new DOMParser().parseFromString(html, 'text/html').getElementById(el.id);
          if (fresh) el.innerHTML = fresh.innerHTML;
        })
        .catch(function () {});
    }, every);
  });
})();
