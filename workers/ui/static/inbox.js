// The inbox works without script; this adds "select every wait on this page", keyboard
// moves, and a list that refreshes itself while nobody is using it.
(() => {
  const rows = () => Array.from(document.querySelectorAll("tr.wait"));
  let current = null; // data-interrupt of the row under the keyboard cursor

  function bindSelectAll() {
    const all = document.getElementById("select-all");
    if (!all) return;
    all.addEventListener("change", () => {
      document.querySelectorAll("input.select").forEach((box) => { box.checked = all.checked; });
    });
  }

  function mark(row) {
    rows().forEach((r) => r.classList.toggle("current", r === row));
    if (row) {
      current = row.dataset.interrupt;
      row.focus({ preventScroll: true });
      row.scrollIntoView({ block: "nearest" });
    }
  }

  function currentRow() {
    return rows().find((r) => r.dataset.interrupt === current) || null;
  }

  function move(step) {
    const list = rows();
    if (!list.length) return;
    const at = list.indexOf(currentRow());
    const next = at < 0 ? (step > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, at + step));
    mark(list[next]);
  }

  function press(row, selector) {
    const button = row && row.querySelector(selector);
    if (button) button.click();
  }

  function typing(target) {
    return target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    const row = currentRow();
    switch (event.key) {
      case "j": case "ArrowDown": move(1); break;
      case "k": case "ArrowUp": move(-1); break;
      case "x": if (row) { const box = row.querySelector("input.select"); box.checked = !box.checked; } break;
      case "a": press(row, 'button.decision[value="approve"], button.choice[value="\\"approve\\""]'); break;
      case "r": press(row, 'button.decision[value="reject"], button.choice[value="\\"reject\\""]'); break;
      case "c": press(row, "button.claim-button, button.release"); break;
      case "o": case "Enter": if (row) window.location.href = row.dataset.url; break;
      case "/": { const search = document.getElementById("thread-search"); if (search) search.focus(); break; }
      default: return;
    }
    event.preventDefault();
  });

  // Refresh the list every data-refresh seconds, unless the approver is working on it:
  // a wait selected, a field focused or holding text, or the tab hidden.
  function busy() {
    if (document.hidden) return true;
    if (document.querySelector("input.select:checked")) return true;
    if (typing(document.activeElement)) return true;
    return Array.from(document.querySelectorAll("#inbox textarea")).some((t) => t.value.trim());
  }

  async function refresh() {
    const box = document.getElementById("inbox");
    if (!box || busy()) return;
    try {
      const response = await fetch(window.location.href, { credentials: "same-origin" });
      if (!response.ok) return;
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.querySelector("main");
      if (!fresh || !page.getElementById("inbox") || busy()) return;
      // the whole main block: the row forms (fresh form tokens) live after the table
      document.querySelector("main").replaceChildren(...Array.from(fresh.childNodes));
      bindSelectAll();
      mark(currentRow());
    } catch (error) {
      // a failed refresh keeps the page as it was; the next one tries again
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    bindSelectAll();
    const box = document.getElementById("inbox");
    const seconds = box ? Number(box.dataset.refresh) : 0;
    if (seconds > 0) window.setInterval(refresh, seconds * 1000);
  });
})();
