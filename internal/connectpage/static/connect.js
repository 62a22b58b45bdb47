// The WhatsApp connection: Meta's Embedded Signup through the Facebook JS SDK. The popup must
// open in the click, so the click calls FB.login at once and tells the server it started in
// parallel. The signup's FINISH message carries the WABA and phone number ids; the login's
// callback carries the code, which the server exchanges. A closed dialog, or a CANCEL message,
// fails the invitation with social_cancelled (the link stays usable: the page offers a retry);
// leaving the page while the signup is under way fails it with signup_abandoned.
(function () {
  "use strict";
  var button = document.getElementById("connect");
  var settings = JSON.parse(document.getElementById("signup").textContent);
  var token = button.getAttribute("data-token");
  var base = location.pathname.replace(/[^/]*$/, "") + token;
  var session = {};
  var cancelled = false;
  var underWay = false; // between the click and the login's callback

  function post(path, body) {
    return fetch(base + path, {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify(body || {}), credentials: "same-origin"});
  }
  function reload() { location.assign(base); }

  window.addEventListener("pagehide", function () {
    if (underWay) {
      navigator.sendBeacon(base + "/fail", new Blob([JSON.stringify({reason: "signup_abandoned"})], {type: "application/json"}));
    }
  });

  window.addEventListener("message", function (ev) {
    if (ev.origin !== settings.origin || typeof ev.data !== "string") { return; }
    var data;
    try { data = JSON.parse(ev.data); } catch (e) { return; }
    if (data.type !== "WA_EMBEDDED_SIGNUP") { return; }
    if (data.event === "FINISH" || data.event === "FINISH_ONLY_WABA" || data.event === "FINISH_WHATSAPP_BUSINESS_APP_ONBOARDING") {
      session = {wabaId: data.data.waba_id || "", phoneNumberId: data.data.phone_number_id || ""};
    } else if (data.event === "CANCEL") {
      cancelled = true;
    }
  });

  function loggedIn(response) {
    underWay = false;
    var code = response && response.authResponse && response.authResponse.code;
    if (!code) {
      post("/fail", {reason: "social_cancelled"}).then(reload, reload);
      return;
    }
    // The FINISH message may come just after the callback: give it a moment.
    setTimeout(function () {
      post("/whatsapp", {code: code, wabaId: session.wabaId || "", phoneNumberId: session.phoneNumberId || ""})
        .then(function (r) { return r.json(); })
        .then(function (next) { location.assign(next.next); }, reload);
    }, session.wabaId || cancelled ? 0 : 500);
  }

  window.fbAsyncInit = function () {
    FB.init({appId: settings.appId, autoLogAppEvents: true, xfbml: false, version: settings.version});
    button.disabled = false;
  };
  button.disabled = true;
  var sdk = document.createElement("script");
  sdk.src = settings.sdk;
  sdk.async = true;
  document.head.appendChild(sdk);

  button.addEventListener("click", function () {
    button.disabled = true;
    underWay = true;
    post("/start");
    FB.login(loggedIn, {config_id: settings.configId, response_type: "code", override_default_response_type: true,
      extras: settings.extras});
  });
})();
