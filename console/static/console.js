// Orbit console: live run pages, loops and fan-outs opened in place, and
// the cancel button without a reload. Every page reads the same without
// this script (a summary's "show" link opens its own page).
"use strict";

// The groups opened on this page: their prefix and the page of them shown,
// in the order they were opened (an outer group before those inside it).
const opened = new Map();

// openGroup puts the page of a group's iterations or items at url under its
// summary row, in place of what was there.
async function openGroup(row, url) {
  const resp = await fetch(url, { headers: { Accept: "text/html" } });
  if (!resp.ok) {
    return;
  }
  const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
  const part = doc.querySelector(".group-page");
  if (!part) {
    return;
  }
  const prefix = row.dataset.group;
  let body = row.nextElementSibling;
  if (!body || !body.classList.contains("group-body")) {
    body = document.createElement("tr");
    body.className = "group-body";
    body.dataset.group = prefix;
    const cell = document.createElement("td");
    cell.colSpan = 6;
    body.appendChild(cell);
    row.after(body);
  }
  body.firstElementChild.replaceChildren(document.adoptNode(part));
  row.querySelector("a.expand").textContent = "hide";
  opened.set(prefix, url);
}

function closeGroup(row) {
  const prefix = row.dataset.group;
  const body = row.nextElementSibling;
  if (body && body.classList.contains("group-body")) {
    body.remove();
  }
  for (const p of [...opened.keys()]) {
    if (p === prefix || p.startsWith(prefix + "/")) {
      opened.delete(p);
    }
  }
  row.querySelector("a.expand").textContent = "show " + row.dataset.kind;
}

// reopen opens again, after a live update replaced the tree, the groups
// that were open, with what they hold now.
async function reopen(run) {
  for (const [prefix, url] of [...opened]) {
    const row = [...run.querySelectorAll("tr.group")].find((r) => r.dataset.group === prefix);
    if (row) {
      await openGroup(row, url);
    } else {
      opened.delete(prefix);
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const run = document.getElementById("run");
  if (run && run.dataset.live === "yes") {
    const url = "/runs/" + encodeURIComponent(run.dataset.run) + "/live?after=" + encodeURIComponent(run.dataset.seq);
    const source = new EventSource(url);
    let pending = Promise.resolve();
    source.addEventListener("run", (e) => {
      pending = pending.then(() => {
        run.innerHTML = e.data;
        return reopen(run);
      });
    });
    source.addEventListener("end", () => { source.close(); run.dataset.live = "no"; });
  }
});

document.addEventListener("click", (e) => {
  const link = e.target.closest("#run a.expand, #run .group-page a.page");
  if (!link || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) {
    return;
  }
  e.preventDefault();
  if (link.classList.contains("expand")) {
    const row = link.closest("tr.group");
    if (opened.has(row.dataset.group)) {
      closeGroup(row);
    } else {
      openGroup(row, link.href);
    }
    return;
  }
  // A page of an open group: its summary row is the row before the one
  // that holds it.
  const row = link.closest("tr.group-body").previousElementSibling;
  openGroup(row, link.href);
});

// A cancel posts without leaving the page, and says beside its button what
// came of it (the runs asked to cancel, or that nothing was live): a
// finished run's page has no live updates that would show it.
document.addEventListener("submit", async (e) => {
  const form = e.target;
  if (!form.classList.contains("cancel")) {
    return;
  }
  e.preventDefault();
  const button = form.querySelector("button");
  let outcome = form.querySelector("output.outcome");
  if (!outcome) {
    outcome = document.createElement("output");
    outcome.className = "outcome";
    outcome.setAttribute("role", "status");
    form.append(" ", outcome);
  }
  button.disabled = true;
  outcome.textContent = "Cancelling…";
  let said = "";
  let status = 0;
  try {
    const resp = await fetch(form.action, { method: "POST", headers: { Accept: "application/json" } });
    status = resp.status;
    if ((resp.headers.get("Content-Type") || "").startsWith("application/json")) {
      said = (await resp.json()).message || "";
    }
  } catch (err) {
    said = "Cancel failed: " + err.message;
  }
  outcome.textContent = said || "Cancel failed (" + status + ")";
  button.disabled = false;
});
