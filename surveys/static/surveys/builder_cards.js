// The survey builder's question cards (admin): list editors for categories and their
// translations (add, remove, reorder), and each card showing only what applies to it:
// categories or a range for its type, the mechanisms for its type, the privacy presets
// where the mechanism has them, the mechanism's own fields for "custom".
(function () {
  "use strict";
  const DEFAULTS = { discrete: "randomised_response", continuous: "additive_laplace" };

  function card(element) {
    return element.closest(".inline-related");
  }

  function changed(element) {
    element.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function newItem(editor, value) {
    const item = document.createElement("li");
    const input = document.createElement("input");
    input.type = "text";
    // A card added with "Add another" was cloned from the template row: its index
    // replaces __prefix__ (Django's inlines.js renames names and ids, not data-name).
    const box = card(editor);
    const index = box && box.id ? box.id.split("-").pop() : "";
    input.name = editor.dataset.name.replace("__prefix__", index);
    input.maxLength = 200;
    input.value = value || "";
    if (editor.getAttribute("lang")) input.lang = editor.getAttribute("lang");
    const tools = document.createElement("span");
    tools.className = "list-editor-tools";
    for (const [name, text, label] of [
      ["list-up", "↑", editor.dataset.up],
      ["list-down", "↓", editor.dataset.down],
      ["list-remove", "✕", editor.dataset.remove],
    ]) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = name;
      button.textContent = text;
      button.title = label;
      button.setAttribute("aria-label", label);
      tools.appendChild(button);
    }
    item.append(input, tools);
    return item;
  }

  function renumber(editor) {
    editor.querySelectorAll("li input").forEach((input, index) => {
      input.setAttribute("aria-label", `${editor.dataset.entry} ${index + 1}`);
    });
  }

  // Each language's labels follow the categories: one per category, in their order.
  function syncLabels(categories, move, removed) {
    const box = card(categories);
    if (!box) return;
    const names = [...categories.querySelectorAll("li input")].map((input) => input.value);
    box.querySelectorAll(".list-editor[data-labels]").forEach((labels) => {
      const list = labels.querySelector("ol");
      if (removed !== undefined && list.children[removed]) list.children[removed].remove();
      if (move) {
        const items = [...list.children];
        const [from, to] = move;
        if (items[from] && items[to]) {
          if (to < from) list.insertBefore(items[from], items[to]);
          else list.insertBefore(items[to], items[from]);
        }
      }
      while (list.children.length < names.length) list.appendChild(newItem(labels));
      while (list.children.length > names.length) list.lastElementChild.remove();
      list.querySelectorAll("li input").forEach((input, index) => {
        input.placeholder = names[index] || "";
      });
      renumber(labels);
    });
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest(".list-editor button");
    if (!button) return;
    const editor = button.closest(".list-editor");
    const list = editor.querySelector("ol");
    const item = button.closest("li");
    const index = item ? [...list.children].indexOf(item) : -1;
    let move = null;
    if (button.classList.contains("list-add")) {
      const added = newItem(editor);
      list.appendChild(added);
      added.querySelector("input").focus();
    } else if (button.classList.contains("list-remove")) {
      item.remove();
    } else if (button.classList.contains("list-up") && item.previousElementSibling) {
      list.insertBefore(item, item.previousElementSibling);
      move = [index, index - 1];
    } else if (button.classList.contains("list-down") && item.nextElementSibling) {
      list.insertBefore(item.nextElementSibling, item);
      move = [index, index + 1];
    } else {
      return;
    }
    renumber(editor);
    if (!editor.dataset.labels && editor.dataset.name.endsWith("-categories")) {
      syncLabels(editor, move, button.classList.contains("list-remove") ? index : undefined);
      matrices(card(editor));
    }
    changed(list);
  });

  document.addEventListener("input", (event) => {
    const editor = event.target.closest(".list-editor");
    if (editor && !editor.dataset.labels) {
      syncLabels(editor, null);
      matrices(card(editor));
    }
    const grid = event.target.closest(".matrix-editor");
    if (grid) checkMatrix(grid);
  });

  // The "own table" of randomised response (MatrixEditor in builder_forms.py): a k x k
  // grid of chances sized and labelled by the card's categories (rows: the true answer,
  // columns: the reported one); each row's total is shown and checked as one types.
  const numbers = new Intl.NumberFormat(document.documentElement.lang || undefined, {
    maximumFractionDigits: 6,
  });

  function categoryNames(box) {
    const editor = box.querySelector(".field-categories .list-editor");
    const names = editor ? [...editor.querySelectorAll("li input")].map((i) => i.value.trim()) : [];
    while (names.length && !names[names.length - 1]) names.pop();
    return names;
  }

  function cell(tag, text, scope) {
    const element = document.createElement(tag);
    if (scope) element.scope = scope;
    if (text !== undefined) element.textContent = text;
    return element;
  }

  function buildMatrix(editor, names) {
    const k = Math.max(2, names.length);
    const table = editor.querySelector("table");
    const body = table.tBodies[0];
    const kept = [...body.rows].map((row) => [...row.querySelectorAll("input")].map((i) => i.value));
    const box = card(editor);
    const index = box && box.id ? box.id.split("-").pop() : "";
    const name = editor.dataset.name.replace("__prefix__", index);
    if (kept.length !== k || kept.some((row) => row.length !== k)) {
      const head = table.tHead.rows[0];
      const corner = head.cells[0];
      head.replaceChildren(corner);
      for (let j = 0; j < k; j++) head.appendChild(cell("th", "", "col"));
      head.appendChild(cell("th", editor.dataset.sum, "col"));
      body.replaceChildren();
      for (let i = 0; i < k; i++) {
        const row = document.createElement("tr");
        row.appendChild(cell("th", "", "row"));
        for (let j = 0; j < k; j++) {
          const input = document.createElement("input");
          Object.assign(input, { type: "number", name, min: "0", max: "1", step: "any" });
          input.inputMode = "decimal";
          input.value = (kept[i] && kept[i][j]) || "";
          const td = document.createElement("td");
          td.appendChild(input);
          row.appendChild(td);
        }
        const total = cell("td");
        total.className = "matrix-sum";
        row.appendChild(total);
        body.appendChild(row);
      }
    }
    const label = (i) => names[i] || String(i + 1);
    [...table.tHead.rows[0].cells].slice(1, k + 1).forEach((th, j) => { th.textContent = label(j); });
    [...body.rows].forEach((row, i) => {
      row.cells[0].textContent = label(i);
      row.querySelectorAll("input").forEach((input, j) => {
        input.setAttribute("aria-label",
          `${editor.dataset.true}: ${label(i)}, ${editor.dataset.reported}: ${label(j)}`);
        input.id = i === 0 && j === 0 && editor.id ? editor.id.replace(/_editor$/, "") : "";
      });
    });
    checkMatrix(editor);
  }

  function checkMatrix(editor) {
    const problems = [];
    let complete = true;
    [...editor.querySelector("tbody").rows].forEach((row, i) => {
      const values = [...row.querySelectorAll("input")].map((input) =>
        input.value === "" ? NaN : Number(input.value));
      const filled = values.filter((v) => !Number.isNaN(v));
      const total = filled.reduce((sum, v) => sum + v, 0);
      row.querySelector(".matrix-sum").textContent = filled.length ? numbers.format(total) : "";
      const badCell = filled.some((v) => v < 0 || v > 1);
      const badSum = filled.length === values.length && Math.abs(total - 1) > 1e-9;
      complete = complete && filled.length === values.length;
      const label = row.cells[0].textContent;
      if (badCell) problems.push(editor.dataset.badCell.replace("{row}", label));
      else if (badSum) {
        problems.push(editor.dataset.badRow.replace("{row}", label).replace("{total}", numbers.format(total)));
      }
      row.classList.toggle("matrix-bad", badCell || badSum);
      row.querySelectorAll("input").forEach((input) => {
        if (badCell || badSum) input.setAttribute("aria-invalid", "true");
        else input.removeAttribute("aria-invalid");
      });
    });
    const status = editor.querySelector(".matrix-status");
    status.textContent = problems.length ? problems.join(" ") : complete ? editor.dataset.ok : "";
    status.classList.toggle("errornote", problems.length > 0);
  }

  function matrices(box) {
    if (!box) return;
    box.querySelectorAll(".matrix-editor").forEach((editor) => buildMatrix(editor, categoryNames(box)));
  }

  function rows(box, selector) {
    return box.querySelectorAll(selector);
  }

  function show(elements, visible) {
    elements.forEach((element) => element.classList.toggle("hidden-by-card", !visible));
  }

  // "Ask again (same answer kept)": the earlier question's type, categories or range and
  // mechanism replace the card's (surveys/builder_reuse.py). The card shows them, and the
  // fields they replace are greyed out and cannot be changed (inert: still sent, ignored).
  const REPLACED = [
    ".form-row.field-type", ".form-row.field-categories", ".form-row.field-range_low",
    ".form-row.field-mechanism", ".form-row.field-privacy", ".form-row[class*='__']",
  ].join(", ");

  function fillList(editor, values) {
    const list = editor.querySelector("ol");
    list.replaceChildren(...values.map((value) => newItem(editor, value)));
    renumber(editor);
    syncLabels(editor, null);
  }

  function askAgain(box) {
    const again = box.querySelector("select[name$='-ask_again']");
    if (!again) return;
    const earlier = again.value ? again.selectedOptions[0] : null;
    if (earlier && earlier.dataset.type) {
      box.querySelector("select[name$='-type']").value = earlier.dataset.type;
      box.querySelector("select[name$='-mechanism']").value = earlier.dataset.mechanism;
      const categories = box.querySelector(".field-categories .list-editor");
      const wanted = JSON.parse(earlier.dataset.categories || "[]");
      const typed = [...categories.querySelectorAll("li input")].map((input) => input.value);
      if (wanted.length && JSON.stringify(wanted) !== JSON.stringify(typed)) fillList(categories, wanted);
      for (const [end, value] of [["low", earlier.dataset.low], ["high", earlier.dataset.high]]) {
        const input = box.querySelector(`input[name$='-range_${end}']`);
        if (input && value !== "") input.value = value;
      }
    }
    box.querySelectorAll(REPLACED).forEach((row) => {
      row.classList.toggle("set-by-ask-again", Boolean(earlier));
      row.inert = Boolean(earlier);
    });
    let note = again.parentElement.querySelector(".ask-again-note");
    if (!note && again.dataset.note) {
      note = document.createElement("p");
      note.className = "help ask-again-note";
      note.textContent = again.dataset.note;
      again.insertAdjacentElement("afterend", note);
    }
    if (note) note.hidden = !earlier;
  }

  function update(box) {
    const type = box.querySelector("select[name$='-type']");
    const mechanism = box.querySelector("select[name$='-mechanism']");
    const privacy = box.querySelector("select[name$='-privacy']");
    if (!type || !mechanism) return;
    askAgain(box);
    const family = type.value === "continuous" ? "continuous" : "discrete";
    show(rows(box, ".form-row.field-categories, .form-row[class*='field-labels_']"), family === "discrete");
    show(rows(box, ".form-row.field-range_low"), family === "continuous");
    for (const option of mechanism.options) {
      const fits = (option.dataset.families || "").split(" ").includes(family);
      option.hidden = !fits;
      option.disabled = !fits;
    }
    if (mechanism.selectedOptions[0] && mechanism.selectedOptions[0].disabled) {
      mechanism.value = DEFAULTS[family];
    }
    const chosen = mechanism.selectedOptions[0];
    const presets = Boolean(chosen && chosen.dataset.presets);
    show(rows(box, ".form-row.field-privacy"), presets);
    const table = (chosen && chosen.dataset.matrix) || "";
    if (privacy) {
      const option = privacy.querySelector("option[value='matrix']");
      if (option) {
        option.hidden = !table;
        option.disabled = !table;
      }
      if (!table && privacy.value === "matrix") privacy.value = "balanced";
    }
    const own = new Set(((chosen && chosen.dataset.params) || "").split(" ").filter(Boolean));
    const ownTable = Boolean(table) && privacy && privacy.value === "matrix";
    const custom = !presets || (privacy && privacy.value === "custom");
    box.querySelectorAll(".form-row[class*='__']").forEach((row) => {
      const name = [...row.classList].find((c) => c.startsWith("field-") && c.includes("__"));
      const field = name.slice("field-".length);
      show([row], field === table ? ownTable : custom && own.has(field));
    });
    if (ownTable) matrices(box);
  }

  // On the add page: only the chosen consultation's languages get translation fields.
  function languages() {
    const data = document.getElementById("consultation-languages");
    const consultation = document.getElementById("id_consultation");
    if (!data || !consultation) return;
    const chosen = JSON.parse(data.textContent)[consultation.value];
    document.querySelectorAll(".form-row[class*='field-text_'], .form-row[class*='field-labels_']")
      .forEach((row) => {
        const name = [...row.classList].find((c) => /^field-(text|labels)_/.test(c));
        const code = name.split("_").pop();
        row.classList.toggle("hidden-by-language", Boolean(chosen) && !chosen.includes(code));
      });
  }

  function start() {
    document.querySelectorAll("#questions-group .inline-related").forEach(update);
    languages();
    const consultation = document.getElementById("id_consultation");
    if (consultation) consultation.addEventListener("change", languages);
    document.addEventListener("formset:added", languages);
    document.querySelectorAll(".list-editor:not([data-labels])").forEach((e) => syncLabels(e, null));
    document.addEventListener("change", (event) => {
      const box = event.target.closest && event.target.closest(".inline-related");
      if (box && event.target.matches("select")) update(box);
    });
    document.addEventListener("formset:added", (event) => update(event.target));
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
