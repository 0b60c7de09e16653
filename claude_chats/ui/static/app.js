// claude-chats ui: search as you type, keys, paging as you scroll, live turns, find, copy.
// Plain JavaScript, no library. The HTML it inserts comes from this server, escaped there; the
// page's Content-Security-Policy forbids inline script, so stored text can never run as code.
(function () {
  "use strict";
  const $ = (sel, root) => (root || document).querySelector(sel);
  const $$ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const DEBOUNCE_MS = 200;
  let current = -1;   // the selected hit (j/k, arrows)

  function typing(el) {
    return el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.tagName === "SELECT" || el.isContentEditable);
  }

  // -- search as you type --------------------------------------------------------------
  const form = $("#search");
  if (form) {
    const box = $("#q"), results = $("#results");
    let timer = null, asked = 0;
    const run = () => {
      const params = new URLSearchParams(new FormData(form));
      const shown = "/search?" + params.toString();
      history.replaceState(null, "", box.value.trim() ? shown : "/search");
      if (!box.value.trim()) { results.innerHTML = ""; return; }
      params.set("fragment", "1");
      const mine = ++asked;
      results.classList.add("busy");
      fetch("/search?" + params.toString(), {credentials: "same-origin"})
        .then((r) => r.text())
        .then((html) => {
          if (mine !== asked) return;   // a later keystroke asked again: its answer is the one shown
          results.innerHTML = html;
          results.dataset.answered = params.get("q");
          select(0);
        })
        .finally(() => { if (mine === asked) results.classList.remove("busy"); });
    };
    const later = () => { clearTimeout(timer); timer = setTimeout(run, DEBOUNCE_MS); };
    box.addEventListener("input", later);
    form.addEventListener("change", (e) => { if (e.target !== box) later(); });
    form.addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(timer); run(); });
    if (box.value) { box.setSelectionRange(box.value.length, box.value.length); select(0); }
  }

  function select(index) {
    const hits = $$("#hits .hit");
    hits.forEach((h) => h.classList.remove("selected"));
    if (!hits.length) { current = -1; return; }
    current = Math.max(0, Math.min(index, hits.length - 1));
    hits[current].classList.add("selected");
    if (index !== 0 || document.activeElement !== $("#q")) hits[current].scrollIntoView({block: "nearest"});
  }

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const inBox = typing(document.activeElement);
    if (e.key === "/" && !inBox) {
      const box = $("#q") || $("#find");
      if (box) { e.preventDefault(); box.focus(); box.select(); }
      return;
    }
    if (!$("#hits")) return;
    const nav = {ArrowDown: 1, ArrowUp: -1, j: 1, k: -1}[e.key];
    if (nav && (!inBox || e.key.startsWith("Arrow"))) {
      e.preventDefault();
      if (inBox) document.activeElement.blur();
      select(current + nav);
    } else if (e.key === "Enter" && !inBox && current >= 0) {
      const hit = $$("#hits .hit")[current];
      if (hit) { e.preventDefault(); location.href = hit.dataset.href; }
    } else if (e.key === "Escape" && inBox) {
      document.activeElement.blur();
    }
  });

  // -- a conversation ------------------------------------------------------------------
  const head = $("#session");
  const messages = $("#messages");
  if (head && messages) {
    const target = (location.hash && document.getElementById(location.hash.slice(1))) || $("article.msg.target", messages);
    if (target) {
      target.classList.add("target");
      // a hit inside a folded tool result or thinking: show why it matched
      target.querySelectorAll("details").forEach((d) => { d.open = true; });
      target.scrollIntoView({block: "center"});
    }

    // the next page of messages as the last one comes into view
    const loading = new IntersectionObserver((entries) => {
      entries.forEach((entry) => { if (entry.isIntersecting) more(entry.target); });
    }, {rootMargin: "800px"});
    const watchMore = () => { const link = $("#more", messages); if (link) loading.observe(link); };
    function more(link) {
      if (link.dataset.loading) return;
      link.dataset.loading = "1";
      loading.unobserve(link);
      fetch(link.href, {credentials: "same-origin"}).then((r) => r.text()).then((html) => {
        link.insertAdjacentHTML("beforebegin", html);
        link.remove();
        const last = $$("article.msg", messages).pop();
        if (last) head.dataset.last = last.id.replace("seq-", "");
        if (!$("#more", messages)) startLive();
        watchMore();
        find();
      });
    }
    messages.addEventListener("click", (e) => {
      const link = e.target.closest("#more");
      if (link) { e.preventDefault(); more(link); }
    });
    watchMore();

    // new turns as the hook records them
    let source = null;
    function startLive() {
      if (source || !window.EventSource) return;
      const url = "/events?session=" + encodeURIComponent(head.dataset.session) + "&after=" + encodeURIComponent(head.dataset.last);
      source = new EventSource(url);
      source.addEventListener("messages", (e) => {
        messages.insertAdjacentHTML("beforeend", e.data);
        head.dataset.last = e.lastEventId || head.dataset.last;
        const added = $$("article.msg", messages).pop();
        if (added) { added.classList.add("arrived"); }
        find();
      });
    }
    if (head.dataset.live === "1") startLive();

    // find within the loaded messages
    const box = $("#find"), count = $("#find-count");
    let found = [], at = -1;
    function find() {
      if (!box) return;
      const q = box.value.trim().toLowerCase();
      $$("article.msg.found", messages).forEach((m) => m.classList.remove("found", "found-current"));
      found = q ? $$("article.msg", messages).filter((m) => m.textContent.toLowerCase().includes(q)) : [];
      found.forEach((m) => m.classList.add("found"));
      count.textContent = q ? found.length + " of the loaded messages" : "";
      at = -1;
    }
    if (box) {
      let timer = null;
      box.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(find, 150); });
      box.addEventListener("keydown", (e) => {
        if (e.key !== "Enter" || !found.length || e.shiftKey) return;
        e.preventDefault();
        found.forEach((m) => m.classList.remove("found-current"));
        at = (at + 1) % found.length;
        found[at].classList.add("found-current");
        found[at].querySelectorAll("details").forEach((d) => { d.open = true; });
        found[at].scrollIntoView({block: "center"});
        count.textContent = (at + 1) + " / " + found.length + " of the loaded messages";
      });
    }
  }

  // -- copy buttons --------------------------------------------------------------------
  document.addEventListener("click", (e) => {
    const button = e.target.closest("button.copy");
    if (!button) return;
    const text = (document.getElementById(button.dataset.copy) || {}).textContent || "";
    const done = () => { button.textContent = "copied"; setTimeout(() => { button.textContent = "copy"; }, 1500); };
    if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, () => {});
  });
})();
