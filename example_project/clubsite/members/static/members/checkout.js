// The single-page checkout: plain JavaScript on the club's REST API (django_paycollect.api), no build step.
// Choose a plan (its price and fees come from POST /api/quotes/), start the payment (POST /api/payments/),
// open the service's hosted page, and poll GET /api/payments/<uuid>/ until the payment is no longer open.
// Signed in with Django's session: every POST carries the CSRF token, as Django requires.
// Its words come from Django's JavaScriptCatalog (the page loads it first): gettext() and interpolate(), with
// the members app's djangojs catalogue; amounts and codes are isolated left to right (<bdi dir="ltr">).
(function () {
  "use strict";
  var root = document.getElementById("checkout");
  var api = root.getAttribute("data-api");
  var pollMs = parseInt(root.getAttribute("data-poll-ms"), 10) || 1500;
  var form = document.getElementById("checkout-form");
  var startButton = document.getElementById("start");
  var quote = document.getElementById("quote");
  var progress = document.getElementById("progress");
  var openLink = document.getElementById("open-payment");
  var state = document.getElementById("payment-state");
  var problem = document.getElementById("problem");
  var polling = null;
  var quoteAsked = 0;  // only the latest quote is shown, whatever order the answers come back in

  function csrfToken() {
    var field = form.querySelector("input[name=csrfmiddlewaretoken]");
    if (field) { return field.value; }
    var found = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return found ? decodeURIComponent(found[1]) : "";
  }

  function call(method, path, body) {
    var options = {method: method, credentials: "same-origin", cache: "no-store",
                   headers: {"Accept": "application/json"}};
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.headers["X-CSRFToken"] = csrfToken();
      options.body = JSON.stringify(body);
    }
    return window.fetch(api + path, options).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        return {status: response.status, data: data};
      });
    });
  }

  function reference() {
    var plan = form.querySelector("input[name=plan]:checked");
    var billing = form.querySelector("input[name=billing]:checked");
    return plan && billing ? plan.value + "-" + billing.value : "";
  }

  function say(text) { problem.textContent = text || ""; problem.hidden = !text; }

  function clearFieldErrors() {
    Array.prototype.forEach.call(form.querySelectorAll("[data-errors-for]"), function (list) {
      list.textContent = ""; list.hidden = true;
    });
  }

  // A 400 names the fields by the spec's dotted paths ("billing_data.phone_number"): show each by its input.
  function showFieldErrors(errors) {
    var rest = [];
    Object.keys(errors).forEach(function (path) {
      var list = form.querySelector('[data-errors-for="' + path + '"]');
      var messages = [].concat(errors[path]);
      if (!list) { rest = rest.concat(messages); return; }
      list.textContent = "";
      messages.forEach(function (text) { var item = document.createElement("li"); item.textContent = text; list.appendChild(item); });
      list.hidden = false;
    });
    say(rest.join(" "));
  }

  function showProblem(answer) {
    if (answer.status === 400) { showFieldErrors(answer.data); return; }
    say(answer.data.detail || interpolate(gettext("The request failed (HTTP %(status)s)."), {status: answer.status}, true));
  }

  // "<label>: <amount currency>", the amount kept whole and left to right in a right-to-left page.
  function amountLine(label, amount, currency) {
    var line = document.createElement("div");
    var figure = document.createElement("bdi");
    figure.setAttribute("dir", "ltr");
    figure.textContent = amount + " " + currency;
    line.appendChild(document.createTextNode(label + " "));
    line.appendChild(figure);
    return line;
  }

  function refreshQuote() {
    var wanted = reference();
    if (!wanted) { return; }
    var method = form.querySelector("input[name=pay_using]:checked");
    var asked = ++quoteAsked;
    quote.textContent = "…";
    call("POST", "quotes/", {reference: wanted, pay_using: method ? method.value : "card"}).then(function (answer) {
      if (asked !== quoteAsked) { return; }
      if (answer.status !== 200) { quote.textContent = ""; showProblem(answer); return; }
      var q = answer.data;
      quote.innerHTML = "";
      [["price", gettext("Price:"), q.amount], ["fees", gettext("Fees:"), q.fees],
       ["total", gettext("Total:"), q.total_amount]].forEach(function (row) {
        var line = amountLine(row[1], row[2], q.currency);
        line.className = row[0] === "total" ? "price" : "";
        line.setAttribute("data-quote", row[0]);
        quote.appendChild(line);
      });
    });
  }

  function show(payment) {
    state.setAttribute("data-state", payment.state);
    state.setAttribute("data-status", payment.status);
    state.className = "status status-" + payment.status;
    state.textContent = {open: gettext("Waiting for your payment"), paid: gettext("Paid"),
                         closed: gettext("Not paid"), unknown: gettext("Not confirmed yet")}[payment.state] || payment.status;
    if (payment.state === "open" && payment.iframe_url) {
      openLink.href = payment.iframe_url; openLink.hidden = false;
    } else {
      openLink.hidden = true;
    }
    var bill = document.getElementById("bill-reference");
    bill.textContent = "";
    if (payment.bill_reference) {
      var number = document.createElement("bdi");
      number.className = "bill";
      number.setAttribute("dir", "ltr");
      number.textContent = payment.bill_reference;
      bill.appendChild(document.createTextNode(gettext("Pay at a kiosk with this bill reference:") + " "));
      bill.appendChild(number);
    }
    if (payment.state === "paid") {
      document.getElementById("paid").hidden = false;
    }
    if (payment.state === "unknown") {
      say(gettext("We could not confirm the payment was started. Do not pay twice: this page keeps checking."));
    }
  }

  function poll(uuid) {
    if (polling) { window.clearTimeout(polling); }
    var deadline = Date.now() + 15 * 60 * 1000;
    function again() {
      call("GET", "payments/" + uuid + "/").then(function (answer) {
        if (answer.status === 200) { show(answer.data); if (answer.data.state !== "open") { return; } }
        if (Date.now() < deadline) { polling = window.setTimeout(again, pollMs); }
      }, function () { if (Date.now() < deadline) { polling = window.setTimeout(again, pollMs * 2); } });
    }
    polling = window.setTimeout(again, pollMs);
  }

  function start(event) {
    event.preventDefault();
    say(""); clearFieldErrors();
    var method = form.querySelector("input[name=pay_using]:checked");
    var body = {reference: reference(), pay_using: method ? method.value : "card",
                billing_data: {phone_number: form.querySelector("#phone_number").value}};
    startButton.disabled = true;
    call("POST", "payments/", body).then(function (answer) {
      startButton.disabled = false;
      if (answer.status === 200 || answer.status === 201 || answer.status === 202) {
        progress.hidden = false;
        show(answer.data);
        if (answer.data.uuid) { poll(answer.data.uuid); }
        return;
      }
      showProblem(answer);
    }, function () { startButton.disabled = false; say(gettext("The site cannot be reached. Try again in a moment.")); });
  }

  form.addEventListener("change", function (event) {
    if (event.target.name === "plan" || event.target.name === "billing" || event.target.name === "pay_using") { refreshQuote(); }
  });
  form.addEventListener("submit", start);
  root.setAttribute("data-ready", "true");
  refreshQuote();
})();
