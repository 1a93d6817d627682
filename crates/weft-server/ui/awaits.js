// The forms that answer await items: clarification (free text), questions
// (options), confirmation (approve or deny), elicitation (a running tool's
// form of typed fields, or a URL) and external tool results (JSON). Each
// builds the answer body of POST /v1/runs/{id}/answers and hands it to
// `submit`, which resolves when the server accepted it.

import { append, h, pre, safeUrl } from "./dom.js";

/** Appends children to `form`, skipping absent ones (DOM append would print "null"). */
const add = (form, ...children) => append(form, children);

/** A form answering `item`; `submit(answer)` posts it. */
export function awaitForm(item, submit) {
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const form = h("form", { class: `await-form kind-${item.kind}`, dataset: { item: item.id } });
  const fail = (message) => {
    error.textContent = message;
    error.hidden = false;
  };
  const send = async (answer) => {
    error.hidden = true;
    for (const b of form.querySelectorAll("button")) b.disabled = true;
    try {
      await submit(answer);
      form.classList.add("sent");
      for (const el of form.elements) el.disabled = true;
    } catch (e) {
      fail(e.message);
      for (const b of form.querySelectorAll("button")) b.disabled = false;
    }
  };
  const builders = {
    clarification: clarificationFields,
    questions: questionFields,
    confirmation: confirmationFields,
    elicitation: elicitationFields,
    external_tools: externalFields,
  };
  const build = builders[item.kind];
  if (!build) {
    add(form, h("p", {}, `An await of kind ${item.kind}: answer it through the API.`));
    return form;
  }
  build(item, form, send, fail);
  add(form, error);
  return form;
}

function clarificationFields(item, form, send) {
  const id = `answer-${item.id}`;
  const text = h("textarea", { id, name: "text", rows: 3, required: true });
  add(form, 
    h("p", { class: "question" }, item.question),
    item.clarifying_prompt ? h("p", { class: "muted" }, item.clarifying_prompt) : null,
    item.missing_fields?.length ? h("p", { class: "muted" }, `Missing: ${item.missing_fields.join(", ")}`) : null,
    item.example_input !== undefined ? pre(item.example_input) : null,
    h("label", { for: id }, "Your answer"),
    text,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Send answer")),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    if (!text.value.trim()) return;
    send({ kind: "clarification", text: text.value });
  });
}

function questionFields(item, form, send) {
  add(form, 
    h("p", { class: "question" }, item.title ?? `${item.tool_name} asks`),
  );
  for (const q of item.questions ?? []) {
    const set = h("fieldset", {}, h("legend", {}, q.prompt));
    for (const option of q.options ?? []) {
      add(set, 
        h("label", { class: "option" },
          h("input", {
            type: q.allow_multiple ? "checkbox" : "radio",
            name: `q-${q.id}`,
            value: option.id,
            dataset: { question: q.id },
          }),
          option.label,
        ),
      );
    }
    add(form, set);
  }
  add(form, h("div", { class: "actions" }, h("button", { type: "submit" }, "Send answers")));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const answers = {};
    for (const q of item.questions ?? []) answers[q.id] = [];
    for (const input of form.querySelectorAll("input:checked")) {
      answers[input.dataset.question].push(input.value);
    }
    send({ kind: "questions", answers });
  });
}

function confirmationFields(item, form, send) {
  const id = `reason-${item.id}`;
  const reason = h("input", { id, name: "reason", type: "text" });
  add(form, 
    h("p", { class: "question" }, `Run ${item.tool_name}?`),
    pre(item.payload ?? {}),
    h("label", { for: id }, "Reason (shown to the planner when denied)"),
    reason,
    h("div", { class: "actions" },
      h("button", { type: "button", class: "approve", onclick: () => send({ kind: "confirmation", approved: true }) }, "Approve"),
      h("button", {
        type: "button",
        class: "deny",
        onclick: () => send({ kind: "confirmation", approved: false, reason: reason.value.trim() || undefined }),
      }, "Deny"),
    ),
  );
  form.addEventListener("submit", (e) => e.preventDefault());
}

function elicitationFields(item, form, send) {
  add(form, h("p", { class: "question" }, item.message), h("p", { class: "muted" }, `asked by ${item.tool}`));
  const read = [];
  if (item.mode === "url") {
    const url = safeUrl(item.url);
    add(form, url
      ? h("p", {}, h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, url))
      : h("p", { class: "error" }, `Not an http(s) URL: ${item.url}`));
  } else {
    const schema = item.requested_schema ?? {};
    const required = new Set(schema.required ?? []);
    for (const [name, prop] of Object.entries(schema.properties ?? {})) {
      const id = `el-${item.id}-${name}`;
      const label = h("label", { for: id }, prop.title ?? name, required.has(name) ? " *" : "");
      let input;
      const choices = prop.enum ?? prop.oneOf?.map((o) => o.const);
      if (Array.isArray(choices)) {
        input = h("select", { id }, h("option", { value: "" }, "—"),
          choices.map((c, i) => h("option", { value: String(i), selected: c === prop.default }, prop.enumNames?.[i] ?? prop.oneOf?.[i]?.title ?? String(c))));
        read.push([name, () => (input.value === "" ? undefined : choices[Number(input.value)])]);
      } else if (prop.type === "boolean") {
        input = h("input", { id, type: "checkbox", checked: prop.default === true });
        read.push([name, () => input.checked]);
      } else if (prop.type === "number" || prop.type === "integer") {
        input = h("input", { id, type: "number", step: prop.type === "integer" ? "1" : "any",
          value: prop.default, min: prop.minimum, max: prop.maximum });
        read.push([name, () => (input.value === "" ? undefined : Number(input.value))]);
      } else {
        const type = { email: "email", uri: "url", date: "date" }[prop.format] ?? "text";
        input = h("input", { id, type, value: prop.default, minlength: prop.minLength, maxlength: prop.maxLength });
        read.push([name, () => (input.value === "" ? undefined : input.value)]);
      }
      const hint = [prop.description, prop.default === undefined ? null : `default: ${JSON.stringify(prop.default)}`]
        .filter(Boolean).join(" · ");
      add(form, label, hint ? h("span", { class: "muted" }, hint) : null, input);
    }
  }
  const action = (a) => () => {
    if (a !== "accept" || item.mode === "url") return send({ kind: "elicitation", action: a });
    const content = {};
    for (const [name, get] of read) {
      const v = get();
      if (v !== undefined) content[name] = v;
    }
    return send({ kind: "elicitation", action: "accept", content });
  };
  add(form, h("div", { class: "actions" },
    h("button", { type: "button", class: "approve", onclick: action("accept") }, "Accept"),
    h("button", { type: "button", onclick: action("decline") }, "Decline"),
    h("button", { type: "button", onclick: action("cancel") }, "Cancel"),
  ));
  form.addEventListener("submit", (e) => e.preventDefault());
}

function externalFields(item, form, send, fail) {
  const id = `results-${item.id}`;
  const template = (item.items ?? []).map((c) => ({
    tool_call_id: c.tool_call_id,
    name: c.tool_name,
    payload: c.payload ?? {},
    result: { kind: "json", value: null },
  }));
  const text = h("textarea", { id, rows: 8 });
  text.value = JSON.stringify(template, null, 2);
  add(form, 
    h("p", { class: "question" }, "Tool calls to execute outside the runtime: give their results."),
    h("label", { for: id }, "Results (JSON array of tool outputs)"),
    text,
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Send results")),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    let results;
    try {
      results = JSON.parse(text.value);
    } catch (err) {
      fail(`Not JSON: ${err.message}`);
      return;
    }
    send({ kind: "external_tools", results });
  });
}

/** A short text of an answer, for the timeline. */
export function describeAnswer(answer) {
  switch (answer?.kind) {
    case "clarification":
      return answer.text;
    case "questions":
      return Object.entries(answer.answers ?? {}).map(([q, o]) => `${q}: ${o.join(", ")}`).join("; ");
    case "confirmation":
      return answer.approved ? "approved" : `denied${answer.reason ? `: ${answer.reason}` : ""}`;
    case "elicitation":
      return answer.content ? `${answer.action} ${JSON.stringify(answer.content)}` : answer.action;
    case "external_tools":
      return `${answer.results?.length ?? 0} result(s)`;
    default:
      return JSON.stringify(answer);
  }
}
