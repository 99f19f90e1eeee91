// The admin's analysis and panel forms (reconstruction/admin_request_form.py,
// admin_analysis.py): show what fits the chosen kind and question. A question for the
// kinds that need one (of the types they take); conditions and quotas that know each
// question's categories or range; only the methods that fit the kind and question type,
// the recommended one chosen, under "advanced"; quotas added and removed one by one.
(function () {
  "use strict";

  function words(list) {
    return (list || "").split(" ").filter(Boolean);
  }

  function wrapper(input) {
    return input.closest("div") || input.parentElement;
  }

  function start() {
    const form = document.getElementById("analysis-form") || document.getElementById("panel-form");
    if (!form) return;
    const kind = form.querySelector("select[name='kind']");
    const attribute = form.querySelector("select[name='attribute']");
    const numbers = new Intl.NumberFormat(document.documentElement.lang || undefined);

    function chosen(select) {
      const option = select.selectedOptions[0];
      return option && option.value ? option : null;
    }

    function updateKind() {
      if (!kind) return;
      const option = chosen(kind);
      if (!option) return;
      const needsAttribute = option.dataset.attribute === "required";
      form.querySelector(".field-attribute").hidden = !needsAttribute;
      const fields = words(option.dataset.fields);
      form.querySelectorAll(".kind-field").forEach((row) => {
        row.hidden = !fields.includes(row.dataset.field);
      });
      const types = words(option.dataset.types);
      for (const item of attribute.options) {
        if (!item.value) continue;
        const fits = types.length === 0 || types.includes(item.dataset.type);
        item.hidden = !fits;
        item.disabled = !fits;
      }
      if (attribute.selectedOptions[0] && attribute.selectedOptions[0].disabled) {
        attribute.value = "";
      }
      const question = needsAttribute ? chosen(attribute) : null;
      const pair = `${kind.value}:${question ? question.dataset.type : types[0] || "discrete"}`;
      let keep = false;
      let recommended = "";
      form.querySelectorAll("input[name='method']").forEach((input) => {
        if (!input.value) return;
        const fits = words(input.dataset.fits).includes(pair);
        const isDefault = words(input.dataset.default).includes(pair);
        if (isDefault) recommended = wrapper(input).textContent.trim();
        wrapper(input).hidden = !fits || isDefault;
        if (input.checked && fits && !isDefault) keep = true;
      });
      if (!keep) form.querySelector("input[name='method'][value='']").checked = true;
      const shown = form.querySelector("#recommended-method");
      if (shown) shown.textContent = recommended;
      form.querySelector("#conditions-needed").hidden = option.dataset.needsWhere !== "1";
    }

    function updateCondition(row) {
      const question = chosen(row.querySelector("select[name$='_attribute']"));
      const type = question ? question.dataset.type : "";
      const op = row.querySelector("select[name$='_op']");
      for (const item of op.options) {
        const fits = type === "continuous" ? item.value !== "in" : item.value === "in";
        item.hidden = !fits;
        item.disabled = !fits;
      }
      if (type === "continuous" && op.value === "in") op.value = "gt";
      row.querySelector(".condition-op").hidden = type !== "continuous";
      row.querySelector(".condition-number").hidden = type !== "continuous";
      row.querySelector(".condition-up-to").hidden = !(type === "continuous" && op.value === "between");
      const categories = row.querySelector(".condition-categories");
      categories.hidden = type !== "discrete";
      const allowed = type === "discrete" ? JSON.parse(question.dataset.categories || "[]") : [];
      categories.querySelectorAll("input[type='checkbox']").forEach((box) => {
        const fits = allowed.includes(box.value);
        wrapper(box).hidden = !fits;
        if (!fits) box.checked = false;
      });
      const range = row.querySelector(".condition-range");
      if (type === "continuous" && question.dataset.low !== "") {
        range.textContent = range.dataset.template
          .replace("{low}", numbers.format(Number(question.dataset.low)))
          .replace("{high}", numbers.format(Number(question.dataset.high)));
      } else {
        range.textContent = "";
      }
    }

    const rows = form.querySelectorAll(".condition-row");
    form.addEventListener("change", (event) => {
      const row = event.target.closest(".condition-row");
      if (row) updateCondition(row);
      else updateKind();
    });
    rows.forEach(updateCondition);
    updateKind();
    quotas(form, updateCondition);
  }

  // The panel form's quotas: the rows in use and one empty one are shown; "Add a quota"
  // shows the next, each row's "Remove this quota" empties and hides it.
  function quotas(form, updateCondition) {
    const rows = [...form.querySelectorAll(".quota-row")];
    const add = form.querySelector("#add-quota");
    if (!rows.length || !add) return;
    const used = (row) =>
      row.querySelector("select[name$='_attribute']").value !== "" || row.querySelector(".errorlist");
    const last = rows.reduce((found, row, index) => (used(row) ? index : found), 0);
    rows.forEach((row, index) => { row.hidden = index > last; });
    const refresh = () => { add.hidden = rows.every((row) => !row.hidden); };
    refresh();
    add.addEventListener("click", () => {
      const next = rows.find((row) => row.hidden);
      if (!next) return;
      next.hidden = false;
      next.querySelector("select").focus();
      refresh();
    });
    form.addEventListener("click", (event) => {
      const button = event.target.closest(".quota-remove");
      if (!button) return;
      const row = button.closest(".quota-row");
      row.querySelectorAll("select").forEach((select) => { select.selectedIndex = 0; });
      row.querySelectorAll("input").forEach((input) => {
        if (input.type === "checkbox") input.checked = false;
        else input.value = "";
      });
      updateCondition(row);
      if (rows.filter((other) => !other.hidden).length > 1) row.hidden = true;
      refresh();
      if (add.hidden) rows.find((other) => !other.hidden).querySelector("select").focus();
      else add.focus();
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
