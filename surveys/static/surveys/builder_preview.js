// The survey builder's live preview (admin): on every change to the questions, POST the
// unsaved form to the admin's preview endpoint and show what each mechanism does.
// Nothing is saved; the endpoint validates each row with the messages saving would give.
(function () {
  "use strict";
  const DELAY_MS = 250;

  function start() {
    const panel = document.getElementById("mechanism-preview");
    const form = document.querySelector("#content-main form[method='post']");
    if (!panel || !form || !panel.dataset.previewUrl) return;
    const items = panel.querySelector(".preview-items");
    const status = panel.querySelector(".preview-status");
    const respondents = panel.querySelector("input[name='respondents']");
    let timer = null;
    let sent = 0;

    // Each question's preview goes into its own card (the inline row with its prefix);
    // previews without a card stay in this panel.
    function place(container) {
      document.querySelectorAll(".card-preview").forEach((slot) => slot.replaceChildren());
      container.querySelectorAll(".question-preview[data-prefix]").forEach((item) => {
        const row = document.getElementById(item.dataset.prefix);
        if (!row) return;
        let slot = row.querySelector(".card-preview");
        if (!slot) {
          slot = document.createElement("div");
          slot.className = "card-preview";
          slot.setAttribute("aria-live", "polite");
          row.appendChild(slot);
        }
        slot.appendChild(item);
      });
    }

    async function refresh() {
      const ticket = ++sent;
      const data = new FormData(form);
      if (panel.dataset.survey) data.set("survey", panel.dataset.survey);
      if (respondents) data.set("respondents", respondents.value);
      status.textContent = "…";
      try {
        const response = await fetch(panel.dataset.previewUrl, {
          method: "POST",
          body: data,
          credentials: "same-origin",
          headers: { "X-Requested-With": "fetch", "Accept": "application/json" },
        });
        const body = await response.json();
        if (ticket !== sent) return; // a later change is on its way
        if (!response.ok) {
          status.textContent = body.detail || String(response.status);
          return;
        }
        items.innerHTML = body.html;
        place(items);
        status.textContent = "";
        panel.dataset.updated = String(ticket);
      } catch (error) {
        if (ticket === sent) status.textContent = String(error);
      }
    }

    function later() {
      clearTimeout(timer);
      timer = setTimeout(refresh, DELAY_MS);
    }

    form.addEventListener("input", later);
    form.addEventListener("change", later);
    // Rows added or removed by the inline formset.
    document.addEventListener("formset:added", later);
    document.addEventListener("formset:removed", later);
    if (respondents) {
      respondents.addEventListener("input", later);
      respondents.form.addEventListener("submit", function (event) {
        event.preventDefault();
        refresh();
      });
    }
    refresh();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
