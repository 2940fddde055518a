// stack-advisor web explorer: copy buttons. Everything else is plain links and GET forms.
"use strict";
function copyText(text, button) {
  const done = () => { const old = button.textContent; button.textContent = "Copied"; setTimeout(() => { button.textContent = old; }, 1500); };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done, () => fallback(text, done));
  } else {
    fallback(text, done);
  }
}
function fallback(text, done) {
  const area = document.createElement("textarea");
  area.value = text; area.setAttribute("readonly", ""); area.style.position = "absolute"; area.style.left = "-9999px";
  document.body.appendChild(area); area.select();
  try { document.execCommand("copy"); done(); } finally { area.remove(); }
}
document.addEventListener("click", (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  if (button.dataset.copyTarget) {
    copyText(document.getElementById(button.dataset.copyTarget).textContent, button);
  } else if (button.hasAttribute("data-copy-link")) {
    copyText(document.getElementById("permalink").href, button);
  }
});
