// The browser return's waiting page (templates/paycollect/return_waiting.html): poll the status endpoint and go
// back to the return URL once the status is final (the return view then redirects to the success or failure
// URL); after the page's maximum wait, say the payment is not confirmed yet. A static file, so the page runs
// under a Content-Security-Policy of script-src 'self' (the template adds request.csp_nonce when there is one).
(function () {
  "use strict";
  var root = document.getElementById("paycollect-return");
  if (!root || !window.fetch) { return; }
  var statusUrl = root.getAttribute("data-status-url");
  var returnUrl = root.getAttribute("data-return-url");
  var interval = parseInt(root.getAttribute("data-poll-ms"), 10) || 1500;
  var deadline = Date.now() + (parseInt(root.getAttribute("data-max-wait-ms"), 10) || 120000);

  function unconfirmed() {
    document.getElementById("paycollect-waiting").hidden = true;
    document.getElementById("paycollect-unconfirmed").hidden = false;
  }
  function later() {
    if (Date.now() > deadline) { unconfirmed(); } else { window.setTimeout(poll, interval); }
  }
  function poll() {
    window.fetch(statusUrl, {cache: "no-store", credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (data) {
        if (data && (data.status === "SUCCESSFUL" || data.status === "FAILED")) {
          window.location.replace(returnUrl);  // the return view redirects to the right page
        } else {
          later();
        }
      }, later);
  }
  window.setTimeout(poll, interval);
})();
