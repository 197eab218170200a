// symtrace report: renders the event list and details from the JSON data island.
// Bundle text only ever reaches the DOM through textContent, never as HTML.
(function () {
  "use strict";
  var PAGE = 50;
  var TYPES = { agent_action: "LLM call", tool_call: "tool call", tool_result: "tool result",
    final_result: "final result" };
  var data = JSON.parse(document.getElementById("symtrace-data").textContent);
  var events = data.events;
  var nodes = data.diagnosis.nodes || {};
  var byId = {};
  events.forEach(function (e) { byId[e.id] = e; });
  var state = { lane: "", type: "", symptom: false, search: "", page: 0, selected: null };

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function haystack(e) {
    if (e._hay === undefined) {
      e._hay = [e.id, e.lane, e.agent || "", e.reason || "", e.summary,
        e.request ? e.request.text : "", e.response ? e.response.text : ""].join("\n").toLowerCase();
    }
    return e._hay;
  }

  function filtered() {
    var needle = state.search.toLowerCase();
    return events.filter(function (e) {
      if (state.lane && e.lane !== state.lane) return false;
      if (state.type && e.type !== state.type) return false;
      if (state.symptom && !(nodes[e.id] && nodes[e.id].evidence.length)) return false;
      return !needle || haystack(e).indexOf(needle) >= 0;
    });
  }

  function badges(e, into) {
    var node = nodes[e.id];
    if (node && node.confirmed.length) into.appendChild(el("span", "badge symptom", node.confirmed.join(" ")));
    else if (node && node.proposed.length) into.appendChild(el("span", "badge proposed", node.proposed.join(" ")));
    if (e.failed) into.appendChild(el("span", "badge failed", "failed"));
    if (e.live) into.appendChild(el("span", "badge live", "live"));
    var summary = data.diagnosis.summary || {};
    if (e.id === summary.anchor) into.appendChild(el("span", "badge anchor", "★ repair resumes here"));
    if (e.id === summary.origin && summary.origin !== summary.symptom) into.appendChild(el("span", "badge target", "started here"));
    if (e.id === summary.symptom) into.appendChild(el("span", "badge target", "shows here"));
  }

  function renderList() {
    var list = document.getElementById("event-list");
    var shown = filtered();
    var pages = Math.max(1, Math.ceil(shown.length / PAGE));
    if (state.page >= pages) state.page = pages - 1;
    list.textContent = "";
    list.start = state.page * PAGE + 1;
    shown.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (e) {
      var li = el("li", "ev-row t-" + e.type + (e.id === state.selected ? " selected" : ""));
      li.dataset.id = e.id;
      li.appendChild(el("span", "pos", e.pos + 1));
      li.appendChild(el("code", "id", e.id));
      li.appendChild(el("span", "lane-name", e.lane));
      badges(e, li);
      li.appendChild(el("span", "summary", e.summary));
      li.addEventListener("click", function () { select(e.id, true); });
      list.appendChild(li);
    });
    document.getElementById("f-count").textContent = shown.length + " of " + events.length + " events";
    var pager = document.getElementById("pager");
    pager.textContent = "";
    var prev = el("button", "", "‹ previous"), next = el("button", "", "next ›");
    prev.disabled = state.page === 0;
    next.disabled = state.page >= pages - 1;
    prev.addEventListener("click", function () { state.page -= 1; renderList(); });
    next.addEventListener("click", function () { state.page += 1; renderList(); });
    pager.appendChild(prev);
    pager.appendChild(el("span", "page", "page " + (state.page + 1) + " of " + pages));
    pager.appendChild(next);
  }

  function payloadBlock(title, p) {
    var box = el("details", "payload");
    box.open = true;
    box.appendChild(el("summary", "", title + (p ? " (" + p.length + " characters)" : "")));
    if (!p) { box.appendChild(el("p", "hint", "none")); return box; }
    var limit = data.preview;
    var pre = el("pre", "", p.text.length > limit ? p.text.slice(0, limit) + "\n…" : p.text);
    box.appendChild(pre);
    if (p.text.length > limit) {
      var more = el("button", "expand", "show all " + p.text.length + " characters");
      more.addEventListener("click", function () { pre.textContent = p.text; more.remove(); });
      box.appendChild(more);
    }
    if (p.length > p.text.length) {
      box.appendChild(el("p", "hint", "cut in this page after " + p.text.length + " of " + p.length +
        " characters: symtrace show --json has all of it"));
    }
    return box;
  }

  function renderDetail(e) {
    var box = document.getElementById("detail");
    box.textContent = "";
    box.appendChild(el("h3", "", e.id));
    var facts = el("p", "facts");
    facts.textContent = (TYPES[e.type] || e.type) + " · step " + (e.pos + 1) + " of " + events.length + " · lane " + e.lane +
      (e.agent ? " · agent " + e.agent : "") + (e.reason ? " · reason " + e.reason : "");
    box.appendChild(facts);
    var marks = el("p", "");
    badges(e, marks);
    box.appendChild(marks);
    if (e.parents.length) {
      var parents = el("p", "parents", "parents: ");
      e.parents.forEach(function (edge) {
        var a = el("a", edge[1], edge[0] + (edge[1] === "control" ? " (lane order)" : ""));
        a.href = "#ev=" + encodeURIComponent(edge[0]);
        parents.appendChild(a);
        parents.appendChild(document.createTextNode(" "));
      });
      box.appendChild(parents);
    }
    var node = nodes[e.id];
    if (node) {
      var ev = el("ul", "evidence");
      node.evidence.forEach(function (item) {
        var li = el("li", "", item.note + " (" + item.category + ", rule " + item.rule + ")");
        if (item.quote) { li.appendChild(document.createTextNode(": ")); li.appendChild(el("q", "", item.quote)); }
        ev.appendChild(li);
      });
      box.appendChild(el("h4", "", "Symptoms (score " + node.score.toFixed(2) + " of 1, " +
        (node.eligible ? "strong enough to repair from" : "too weak to repair from") + ")"));
      box.appendChild(ev);
    }
    box.appendChild(payloadBlock("request", e.request));
    box.appendChild(payloadBlock("response", e.response));
    if (Object.keys(e.meta).length) {
      var meta = JSON.stringify(e.meta, null, 2);
      box.appendChild(payloadBlock("meta", { text: meta, length: meta.length }));
    }
  }

  function select(id, updateHash) {
    var e = byId[id];
    if (!e) return;
    state.selected = id;
    var shown = filtered();
    var index = shown.indexOf(e);
    if (index < 0) {  // make the selection visible: clear filters that hide it
      state.lane = ""; state.type = ""; state.symptom = false; state.search = "";
      document.getElementById("f-lane").value = "";
      document.getElementById("f-type").value = "";
      document.getElementById("f-symptom").checked = false;
      document.getElementById("f-search").value = "";
      index = events.indexOf(e);
    }
    state.page = Math.floor(index / PAGE);
    renderList();
    renderDetail(e);
    document.querySelectorAll("rect.ev.selected").forEach(function (r) { r.classList.remove("selected"); });
    document.querySelectorAll('rect.ev[data-id="' + CSS.escape(id) + '"]').forEach(function (r) { r.classList.add("selected"); });
    if (updateHash) toHash();
  }

  // The view is in the URL (#lane=…&type=…&q=…&symptoms=1&ev=…), so a link shows the same view.
  function toHash() {
    var params = new URLSearchParams();
    if (state.lane) params.set("lane", state.lane);
    if (state.type) params.set("type", state.type);
    if (state.search) params.set("q", state.search);
    if (state.symptom) params.set("symptoms", "1");
    if (state.selected) params.set("ev", state.selected);
    var hash = params.toString();
    if (location.hash.slice(1) !== hash) history.replaceState(null, "", hash ? "#" + hash : location.pathname);
  }

  function fromHash() {
    var params = new URLSearchParams(location.hash.slice(1));
    state.lane = params.get("lane") || "";
    state.type = params.get("type") || "";
    state.search = params.get("q") || "";
    state.symptom = params.get("symptoms") === "1";
    state.page = 0;
    document.getElementById("f-lane").value = state.lane;
    document.getElementById("f-type").value = state.type;
    document.getElementById("f-search").value = state.search;
    document.getElementById("f-symptom").checked = state.symptom;
    renderList();
    if (params.get("ev")) select(params.get("ev"), false);
  }

  function refilter() { state.page = 0; renderList(); toHash(); }
  document.getElementById("f-lane").addEventListener("change", function (ev) { state.lane = ev.target.value; refilter(); });
  document.getElementById("f-type").addEventListener("change", function (ev) { state.type = ev.target.value; refilter(); });
  document.getElementById("f-symptom").addEventListener("change", function (ev) { state.symptom = ev.target.checked; refilter(); });
  var timer = null;
  document.getElementById("f-search").addEventListener("input", function (ev) {
    clearTimeout(timer);
    timer = setTimeout(function () { state.search = ev.target.value; refilter(); }, 120);
  });
  document.querySelectorAll("rect.ev").forEach(function (r) {
    r.addEventListener("click", function () { select(r.getAttribute("data-id"), true); });
  });
  document.querySelectorAll("text.lane").forEach(function (t) {
    t.addEventListener("click", function () {
      state.lane = t.getAttribute("data-lane");
      document.getElementById("f-lane").value = state.lane;
      refilter();
      document.getElementById("events").scrollIntoView();
    });
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
  document.body.setAttribute("data-rendered", String(document.querySelectorAll("#event-list li").length));
})();
