// The planner: recompute as inputs change, without reloading the page.
// Debounced POST of the form to the results fragment; errors are placed next to their fields.
(function () {
  "use strict";
  var form = document.getElementById("scenario-form");
  var results = document.getElementById("results");
  if (!form || !results || !window.fetch) return;
  var url = form.getAttribute("data-results-url");
  var status = form.querySelector("[data-status]");
  var timer = null;
  var controller = null;
  var sequence = 0;

  function clearErrors() {
    form.querySelectorAll(".field.has-error").forEach(function (el) { el.classList.remove("has-error"); });
    form.querySelectorAll(".field-error").forEach(function (el) { el.textContent = ""; });
    form.querySelectorAll("[aria-invalid]").forEach(function (el) { el.removeAttribute("aria-invalid"); });
  }

  function showErrors(container) {
    var unplaced = false;
    container.querySelectorAll("[data-error-for]").forEach(function (item) {
      var name = item.getAttribute("data-error-for");
      var field = form.querySelector('.field[data-field="' + name + '"]');
      if (!field) { unplaced = true; return; }
      field.classList.add("has-error");
      var details = field.closest("details");
      if (details) details.open = true;
      var slot = field.querySelector(".field-error");
      slot.textContent = (slot.textContent ? slot.textContent + " " : "") + item.textContent;
      var input = field.querySelector("input, select, textarea");
      if (input) input.setAttribute("aria-invalid", "true");
      item.hidden = true;
    });
    return unplaced;
  }

  function calculate() {
    if (controller) controller.abort();
    controller = window.AbortController ? new AbortController() : null;
    var mine = ++sequence;
    if (status) status.textContent = "Calculating…";
    results.setAttribute("aria-busy", "true");
    fetch(url, {
      method: "POST",
      body: new FormData(form),
      headers: { "X-Requested-With": "fetch" },
      credentials: "same-origin",
      signal: controller ? controller.signal : undefined
    }).then(function (response) {
      return response.text().then(function (html) { return { ok: response.ok, status: response.status, html: html }; });
    }).then(function (answer) {
      if (mine !== sequence) return;
      results.removeAttribute("aria-busy");
      clearErrors();
      if (answer.ok) {
        results.classList.remove("stale");
        results.innerHTML = answer.html;
        if (status) status.textContent = "Updated.";
      } else if (answer.status === 422) {
        var holder = document.createElement("div");
        holder.innerHTML = answer.html;
        showErrors(holder);
        results.querySelectorAll("[data-form-errors]").forEach(function (el) { el.remove(); });
        results.insertBefore(holder.firstElementChild || holder, results.firstChild);
        results.classList.add("stale");  // what is still shown belongs to the last valid inputs
        if (status) status.textContent = "Fix the marked inputs.";
      } else {
        if (status) status.textContent = "The server could not calculate (" + answer.status + "). Try again.";
      }
    }).catch(function (error) {
      if (error && error.name === "AbortError") return;
      results.removeAttribute("aria-busy");
      if (status) status.textContent = "Network problem: the results were not updated.";
    });
  }

  function schedule() {
    if (timer) clearTimeout(timer);
    timer = setTimeout(calculate, 350);
  }

  // Show the fields of the chosen workload kind only (the server ignores the other kind's anyway).
  var kind = form.querySelector("[name=kind]");
  function showKind() { if (kind) form.setAttribute("data-kind", kind.value); }
  if (kind) kind.addEventListener("change", showKind);
  showKind();

  // Geometry follows the size: typing a new size clears layers/hidden/heads/KV heads (the server derives them from the
  // catalog's shapes and the results show the size they imply); choosing a published model clears them all.
  var geometry = ["layers", "hidden", "heads", "kv_heads"];
  function clear(names) {
    names.forEach(function (name) {
      var input = form.querySelector("[name=" + name + "]");
      if (input) input.value = "";
    });
  }
  var size = form.querySelector("[name=params_b]");
  var modelName = form.querySelector("[name=model_name]");
  if (size) size.addEventListener("input", function () { clear(geometry.concat(["model_name"])); });
  if (modelName) modelName.addEventListener("change", function () {
    if (modelName.value) clear(geometry.concat(["params_b"]));
  });

  form.addEventListener("input", schedule);
  form.addEventListener("change", schedule);
  form.addEventListener("submit", function (event) {
    var submitter = event.submitter;
    // Save and PDF go to their own URLs as ordinary submissions; Calculate stays on the page.
    if (submitter && submitter.getAttribute("formaction")) return;
    event.preventDefault();
    if (timer) clearTimeout(timer);
    calculate();
  });
})();
