// Orbit console: live run pages and the cancel button without a reload.
// Every page reads the same without this script.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const run = document.getElementById("run");
  if (run && run.dataset.live === "yes") {
    const url = "/runs/" + encodeURIComponent(run.dataset.run) + "/live?after=" + encodeURIComponent(run.dataset.seq);
    const source = new EventSource(url);
    source.addEventListener("run", (e) => { run.innerHTML = e.data; });
    source.addEventListener("end", () => { source.close(); run.dataset.live = "no"; });
  }
});

document.addEventListener("submit", async (e) => {
  const form = e.target;
  if (!form.classList.contains("cancel")) {
    return;
  }
  e.preventDefault();
  const button = form.querySelector("button");
  button.disabled = true;
  button.textContent = "Cancelling…";
  const resp = await fetch(form.action, { method: "POST", redirect: "manual" });
  if (resp.type !== "opaqueredirect" && !resp.ok) {
    button.textContent = "Cancel failed (" + resp.status + ")";
  }
});
