/*
 * Budget dashboard of the privacy-accountant service.
 *
 * Reads the ledger's JSON endpoints (the same ones as the SDK) with the API key the user gives;
 * every number shown is a value of those answers, only formatted here, never recomputed.
 * The key lives in sessionStorage (this tab only). A link /dashboard#key=<key> logs in directly, and
 * /dashboard#/users/<id>?key=<key> opens that page signed in: the fragment never reaches the server,
 * and the key is removed from the address bar at once. A route opened without a key is kept through
 * the sign-in form.
 * Views are addressed by the fragment too: #/, #/users?…, #/users/<id>, #/cohorts, #/cohorts/<id>.
 * Data is inserted as text (textContent), never as HTML.
 */
(function () {
  "use strict";

  var KEY_STORE = "privacy-accountant.api-key";
  var PAGE_SIZES = [10, 25, 50, 100];
  var charts = [];

  // ------------------------------------------------------------------------------ helpers
  function $(id) { return document.getElementById(id); }

  function el(tag, attrs) {
    var node = document.createElement(tag);
    var kids = Array.prototype.slice.call(arguments, 2);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "text") node.textContent = v;
        else if (k === "cls") node.className = v;
        else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
        else node.setAttribute(k, v === true ? "" : v);
      });
    }
    kids.forEach(function (c) { append(node, c); });
    return node;
  }

  function append(node, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { append(node, x); }); return; }
    node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }

  function fmt(x, digits) {
    if (x === null || x === undefined) return "∞";
    if (typeof x !== "number") return String(x);
    if (x === 0) return "0";
    var a = Math.abs(x);
    if (a >= 1e6 || a < 1e-4) return x.toExponential((digits || 4) - 1).replace("e+", "e");
    return String(Number(x.toPrecision(digits || 4)));
  }

  function fmtInt(x) { return x === null || x === undefined ? "–" : Number(x).toLocaleString("en-US"); }

  function fmtTime(iso) {
    if (!iso) return "never";
    var d = new Date(iso);
    if (isNaN(d.getTime())) return iso;
    return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "").replace(/Z$/, "") + " UTC";
  }

  function eventText(ev) {
    if (!ev) return "";
    var parts = [ev.mechanism];
    Object.keys(ev).forEach(function (k) {
      if (k === "mechanism") return;
      var v = ev[k];
      parts.push(k + "=" + (typeof v === "object" ? JSON.stringify(v) : v));
    });
    return parts.join(" ");
  }

  function policyBadge(p) { return el("span", { cls: "badge " + (p === "filter" ? "filter" : ""), text: p }); }

  function userLink(id) { return el("a", { href: "#/users/" + encodeURIComponent(id), cls: "id", text: id }); }

  function cohortLink(id) { return el("a", { href: "#/cohorts/" + encodeURIComponent(id), cls: "id", text: id }); }

  function stat(label, value, hint, extra) {
    return el("div", { cls: "card stat " + (extra || ""), "data-stat": label },
      el("div", { cls: "label", text: label }),
      el("div", { cls: "value", text: value }),
      hint ? el("div", { cls: "hint", text: hint }) : null);
  }

  // ------------------------------------------------------------------------------ session
  function getKey() { try { return sessionStorage.getItem(KEY_STORE); } catch (e) { return null; } }
  function setKey(k) { sessionStorage.setItem(KEY_STORE, k); }
  function clearKey() { sessionStorage.removeItem(KEY_STORE); }

  // A link may carry the key in its fragment, alone (#key=K: the overview) or in a route's query
  // (#/users/alice?key=K): the key is stored and removed, and the rest of the route opens.
  function takeKeyFromFragment() {
    var parts = location.hash.replace(/^#/, "").split(/[?&]/);
    var path = parts[0].indexOf("=") >= 0 ? "" : parts.shift();
    var key = null;
    var rest = parts.filter(function (kv) {
      if (kv.slice(0, 4) !== "key=") return kv !== "";
      key = decodeURIComponent(kv.slice(4));
      return false;
    });
    if (key === null) return false;
    // the key must not stay in the address bar or the history
    history.replaceState(null, "", location.pathname + location.search + "#" + (path || "/") + (rest.length ? "?" + rest.join("&") : ""));
    if (key) { setKey(key); return true; }
    return false;
  }

  function AuthError(msg) { this.message = msg; }

  function api(path, params) {
    var qs = "";
    if (params) {
      var parts = [];
      Object.keys(params).forEach(function (k) {
        var v = params[k];
        if (v === null || v === undefined || v === "") return;
        parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(v));
      });
      if (parts.length) qs = "?" + parts.join("&");
    }
    return fetch(path + qs, { headers: { Authorization: "Bearer " + getKey(), Accept: "application/json" }, cache: "no-store" })
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (body) {
          if (r.status === 401) throw new AuthError(typeof body.detail === "string" ? body.detail : "invalid API key");
          if (!r.ok) {
            var d = body.detail;
            if (Array.isArray(d)) d = d.map(function (e) { return (e.loc || []).slice(1).join(".") + ": " + e.msg; }).join("; ");
            throw new Error((d || ("HTTP " + r.status)));
          }
          return body;
        });
      });
  }

  function showLogin(message) {
    $("nav").hidden = true;
    $("session").hidden = true;
    $("view").replaceChildren();
    $("login").hidden = false;
    var err = $("login-error");
    err.hidden = !message;
    err.textContent = message || "";
    $("api-key").focus();
    showNoKeys();
  }

  // a service started without ACCOUNTANT_API_KEYS refuses every key: say so on the sign-in card
  // (GET /health needs no key and tells whether keys are configured)
  function showNoKeys() {
    fetch("/health", { headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : {}; })
      .then(function (h) { $("login-nokeys").hidden = h.api_keys_configured !== false; })
      .catch(function () { /* the sign-in works as before */ });
  }

  function showApp() {
    $("login").hidden = true;
    $("nav").hidden = false;
    $("session").hidden = false;
  }

  // ------------------------------------------------------------------------------ charts
  function destroyCharts() {
    charts.forEach(function (c) { if (c.ro) c.ro.disconnect(); c.plot.destroy(); });
    charts = [];
    window.dashboardCharts = {};
  }

  var UTC = function (ts) { return uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"); };

  // Time axes tick in one unit chosen by the data's time span (never seconds): minutes up to 3
  // hours, hours up to 4 days, days beyond. A span shorter than 10 minutes is widened to 10.
  var MINUTE = 60, HOUR = 3600, DAY = 86400;
  var TIME_UNITS = {
    minute: { incrs: [MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR], space: 60,
      label: function (d) { return pad2(d.getUTCHours()) + ":" + pad2(d.getUTCMinutes()); } },
    hour: { incrs: [HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY], space: 90,
      label: function (d) { return pad2(d.getUTCMonth() + 1) + "-" + pad2(d.getUTCDate()) + " " + pad2(d.getUTCHours()) + ":00"; } },
    day: { incrs: [DAY, 2 * DAY, 7 * DAY, 14 * DAY, 30 * DAY, 91 * DAY, 365 * DAY], space: 90,
      label: function (d) { return d.getUTCFullYear() + "-" + pad2(d.getUTCMonth() + 1) + "-" + pad2(d.getUTCDate()); } },
  };

  function pad2(n) { return (n < 10 ? "0" : "") + n; }

  function timeUnit(span) { return span <= 3 * HOUR ? "minute" : span <= 4 * DAY ? "hour" : "day"; }

  /** The x axis and scale range of a time chart over the epochs `xs` (see TIME_UNITS). */
  function timeAxis(xs) {
    var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs);
    var unit = timeUnit(hi - lo), spec = TIME_UNITS[unit];
    return {
      unit: unit,
      incrs: spec.incrs,
      space: spec.space,
      values: function (u, splits) { return splits.map(function (ts) { return spec.label(new Date(ts * 1e3)); }); },
      range: function (u, mn, mx) {
        var widen = Math.max(0, 10 * MINUTE - (mx - mn)) / 2;
        return [mn - widen, mx + widen];
      },
    };
  }

  /** A uPlot chart in `box`: opts.title, opts.x {label, time, log}, opts.y {label, log, range}, opts.series.
   * The legend shows the point under the cursor, and otherwise the point `opts.legendAt` (default:
   * the last, i.e. the latest of a time series). A time x axis ticks in a unit fit for its span. */
  function chart(box, opts, data) {
    var n = data[0].length;
    var restAt = opts.legendAt === undefined ? n - 1 : opts.legendAt;
    var axis = opts.x.time ? timeAxis(data[0]) : null;
    if (axis) box.setAttribute("data-time-unit", axis.unit);
    var width = Math.max(box.clientWidth || 600, 320);
    var axisStroke = "#64708a";
    var grid = { stroke: "#eef1f6", width: 1 };
    var o = {
      title: opts.title,
      width: width,
      height: opts.height || 300,
      tzDate: UTC,
      cursor: { drag: { x: true, y: false } },
      legend: { live: true },
      hooks: {
        // the cursor left the plot (or never entered it): show the resting point instead of "--"
        setLegend: [function (u) { if (u.legend.idx == null && restAt >= 0) u.setLegend({ idx: restAt }, false); }],
      },
      scales: {
        x: { time: !!opts.x.time, distr: opts.x.log ? 3 : 1, range: opts.x.range || (axis && axis.range) },
        y: { distr: opts.y.log ? 3 : 1, range: opts.y.range },
      },
      axes: [
        { label: opts.x.label, stroke: axisStroke, grid: grid, ticks: grid, labelSize: 28,
          incrs: axis ? axis.incrs : opts.x.integer ? [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000] : undefined,
          values: axis ? axis.values : undefined, space: axis ? axis.space : undefined },
        { label: opts.y.label, stroke: axisStroke, grid: grid, ticks: grid, size: 64, labelSize: 28 },
      ],
      series: [{ label: opts.x.legend || opts.x.label, value: opts.x.value }].concat(opts.series),
    };
    var plot = new uPlot(o, data, box);
    if (restAt >= 0) plot.setLegend({ idx: restAt }, false);
    var entry = { plot: plot };
    // read-only handle for tests and the curious: the exact series each chart draws
    window.dashboardCharts = window.dashboardCharts || {};
    if (box.id) window.dashboardCharts[box.id] = plot;
    if (window.ResizeObserver) {
      entry.ro = new ResizeObserver(function () {
        var w = Math.max(box.clientWidth, 320);
        if (Math.abs(w - plot.width) > 4) plot.setSize({ width: w, height: o.height });
      });
      entry.ro.observe(box);
    }
    charts.push(entry);
    return plot;
  }

  function epochs(isoList) { return isoList.map(function (s) { return Date.parse(s) / 1000; }); }

  // ------------------------------------------------------------------------------ routing
  function parseHash() {
    var h = location.hash.replace(/^#/, "") || "/";
    var q = h.indexOf("?");
    var path = q >= 0 ? h.slice(0, q) : h;
    var query = {};
    if (q >= 0) {
      h.slice(q + 1).split("&").forEach(function (kv) {
        if (!kv) return;
        var i = kv.indexOf("=");
        var k = decodeURIComponent(i >= 0 ? kv.slice(0, i) : kv);
        query[k] = i >= 0 ? decodeURIComponent(kv.slice(i + 1)) : "";
      });
    }
    var segs = path.split("/").filter(Boolean).map(decodeURIComponent);
    return { segs: segs, query: query };
  }

  function hashFor(path, query) {
    var parts = [];
    Object.keys(query || {}).forEach(function (k) {
      var v = query[k];
      if (v === null || v === undefined || v === "") return;
      parts.push(encodeURIComponent(k) + "=" + encodeURIComponent(v));
    });
    return "#" + path + (parts.length ? "?" + parts.join("&") : "");
  }

  function setActiveNav(name) {
    Array.prototype.forEach.call(document.querySelectorAll("#nav a[data-nav]"), function (a) {
      a.classList.toggle("active", a.getAttribute("data-nav") === name);
    });
  }

  var renderSeq = 0;

  function render() {
    if (takeKeyFromFragment()) { /* logged in by link */ }
    if (!getKey()) { showLogin(); return; }
    showApp();
    destroyCharts();
    var seq = ++renderSeq;
    var r = parseHash();
    var view = $("view");
    view.replaceChildren(el("div", { cls: "loading", text: "Loading…" }));
    var p;
    if (r.segs[0] === "users" && r.segs.length > 1) { setActiveNav("users"); p = viewUser(r.segs.slice(1).join("/"), r.query); }
    else if (r.segs[0] === "users") { setActiveNav("users"); p = viewUsers(r.query); }
    else if (r.segs[0] === "cohorts" && r.segs.length > 1) { setActiveNav("cohorts"); p = viewCohort(r.segs.slice(1).join("/"), r.query); }
    else if (r.segs[0] === "cohorts") { setActiveNav("cohorts"); p = viewCohorts(r.query); }
    else { setActiveNav("overview"); p = viewOverview(r.query); }
    p.then(function (nodes) {
      if (seq !== renderSeq) return;
      view.replaceChildren();
      append(view, nodes.nodes);
      if (nodes.after) nodes.after();
      view.setAttribute("data-ready", "1");
    }).catch(function (e) {
      if (seq !== renderSeq) return;
      if (e instanceof AuthError) { clearKey(); showLogin(e.message + ": check the key and sign in again."); return; }
      view.replaceChildren(el("div", { cls: "card error", role: "alert", text: "Could not load this page: " + e.message }));
      view.setAttribute("data-ready", "1");
    });
  }

  // ------------------------------------------------------------------------------ overview
  function viewOverview(query) {
    var bucket = query.bucket === "day" ? "day" : "hour";
    return Promise.all([
      api("/v1/summary", { bucket: bucket }),
      api("/v1/dashboard/nearest-exhaustion", { limit: 10 }),
      api("/v1/cohorts", { limit: 8 }),
    ]).then(function (res) {
      var s = res[0], near = res[1], cohorts = res[2];
      var box = el("div", { cls: "chart", id: "timeline-chart" });
      var bucketSel = el("select", { id: "bucket", "aria-label": "timeline buckets", onchange: function () {
        location.hash = hashFor("/", { bucket: this.value === "day" ? "day" : "" });
      } }, el("option", { value: "hour", text: "last 48 hours" }), el("option", { value: "day", text: "last 30 days" }));
      bucketSel.value = bucket;

      var nearRows = near.users.map(function (u) {
        var frac = u.remaining_fraction;
        var cls = frac < 0.1 ? "bad" : frac < 0.25 ? "warn" : "";
        return el("tr", null,
          el("td", null, userLink(u.user_id)),
          el("td", null, policyBadge(u.policy)),
          el("td", { cls: "num", text: fmt(u.spent.epsilon) }),
          el("td", { cls: "num", text: fmt(u.budget.epsilon) }),
          el("td", { cls: "num", text: fmt(u.remaining_epsilon) }),
          el("td", null, el("span", { cls: "meter " + cls }, el("span", { style: "width:" + Math.round(100 * Math.max(0, Math.min(1, frac))) + "%" })),
            fmt(frac, 3)));
      });
      var cohortRows = cohorts.items.map(function (c) {
        return el("tr", null, el("td", null, cohortLink(c.cohort_id)), el("td", { cls: "num", text: fmtInt(c.members) }),
          el("td", { cls: "num", text: fmtInt(c.rounds) }));
      });

      var nodes = [
        el("h1", { cls: "page", text: "Overview" }),
        el("p", { cls: "subtitle", text: "Every user's privacy budget in this ledger." }),
        el("div", { cls: "stats", id: "stats" },
          stat("Users", fmtInt(s.users)),
          stat("Cohorts", fmtInt(s.cohorts)),
          stat("Near exhaustion", fmtInt(s.near_exhaustion), "remaining ε < " + s.near_exhaustion_fraction + " × budget ε", s.near_exhaustion ? "warn" : ""),
          stat("Charges admitted", fmtInt(s.charges)),
          stat("Charges refused", fmtInt(s.refusals), "requests refused (nothing recorded)", s.refusals ? "bad" : "")),
        el("div", { cls: "card" },
          el("div", { cls: "toolbar" }, el("h2", { cls: "grow", text: "Charges admitted and refused over time" }), bucketSel),
          box),
        el("div", { cls: "grid wide-left" },
          el("div", { cls: "card" }, el("h2", null, "Closest to exhaustion ", el("span", { cls: "muted", text: "(smallest remaining fraction)" })),
            near.users.length ? el("div", { cls: "table-wrap" }, el("table", { id: "near-table" },
              el("thead", null, el("tr", null, el("th", { text: "User" }), el("th", { text: "Policy" }), el("th", { cls: "num", text: "Spent ε" }),
                el("th", { cls: "num", text: "Budget ε" }), el("th", { cls: "num", text: "Remaining ε" }), el("th", { text: "Remaining" }))),
              el("tbody", null, nearRows))) : el("div", { cls: "empty", text: "No users yet." })),
          el("div", { cls: "card" }, el("h2", null, "Cohorts ", el("span", { cls: "muted", text: "(" + fmtInt(cohorts.total) + ")" })),
            cohorts.items.length ? el("div", { cls: "table-wrap" }, el("table", null,
              el("thead", null, el("tr", null, el("th", { text: "Cohort" }), el("th", { cls: "num", text: "Members" }), el("th", { cls: "num", text: "Rounds" }))),
              el("tbody", null, cohortRows))) : el("div", { cls: "empty", text: "No cohorts yet." }),
            el("p", null, el("a", { href: "#/cohorts", text: "All cohorts →" })))),
      ];
      return {
        nodes: nodes,
        after: function () {
          var xs = epochs(s.timeline.map(function (b) { return b.start; }));
          var bars = uPlot.paths.bars;
          var half = (bucket === "day" ? 86400 : 3600) / 2;
          chart(box, {
            x: { label: bucket === "day" ? "Day (UTC)" : "Hour (UTC)", time: true, range: function (u, mn, mx) { return [mn - half, mx + half]; } },
            y: { label: "Charge requests", range: function (u, mn, mx) { return [0, Math.max(1, mx * 1.15)]; } },
            series: [
              { label: "admitted", stroke: "#2f9e44", width: 0, fill: "rgba(47,158,68,.55)", paths: bars({ size: [0.42, 40], align: -1 }), points: { show: false } },
              { label: "refused", stroke: "#e03131", width: 0, fill: "rgba(224,49,49,.6)", paths: bars({ size: [0.42, 40], align: 1 }), points: { show: false } },
            ],
          }, [xs, s.timeline.map(function (b) { return b.admitted; }), s.timeline.map(function (b) { return b.refused; })]);
        },
      };
    });
  }

  // ------------------------------------------------------------------------------ users
  var SORTABLE = { user_id: "user_id", spent: "spent", remaining: "remaining", last_charge: "last_charge" };

  // Paging. "Next" follows the listing's next_cursor (any depth costs what the first page costs); the
  // hash keeps that cursor and the page's position ("at", only for the "Showing" line). "Previous" returns
  // to the page that led here (remembered for this tab), else pages back by offset, which the service
  // allows up to MAX_OFFSET (deeper: the first page).
  var MAX_OFFSET = 10000;
  var cameFrom = {};

  // {cursor, at} of the page a route's query names (an offset page: no cursor, at = offset)
  function pageState(query) {
    var cursor = query.cursor || "";
    return { cursor: cursor, at: cursor ? intParam(query.at, 0, 0, 1e15) : intParam(query.offset, 0, 0, MAX_OFFSET) };
  }

  // the query parameters of the page's request
  function pageParams(st) {
    return st.cursor ? { cursor: st.cursor } : { offset: st.at };
  }

  // the hash query of a page: {cursor, at} or {offset}
  function pageHash(p) {
    return p.cursor ? { cursor: p.cursor, at: p.at } : { offset: p.offset || "" };
  }

  // hashOf({cursor, at} or {offset}) is the route's hash of that page
  function pager(total, st, limit, shown, nextCursor, hashOf) {
    var first = shown ? st.at + 1 : 0;
    function prev() {
      var back = cameFrom[location.hash];
      var off = Math.max(0, st.at - limit);
      location.hash = back || hashOf({ offset: off <= MAX_OFFSET ? off : 0 });
    }
    function next() {
      var h = hashOf({ cursor: nextCursor, at: st.at + shown });
      cameFrom[h] = location.hash;
      location.hash = h;
    }
    return el("div", { cls: "pager" },
      el("span", { id: "page-info", text: "Showing " + fmtInt(first) + "–" + fmtInt(st.at + shown) + " of " + fmtInt(total) }),
      el("div", { cls: "buttons" },
        el("button", { type: "button", cls: "secondary", id: "prev-page", disabled: st.at <= 0, onclick: prev }, "← Previous"),
        el("button", { type: "button", cls: "secondary", id: "next-page", disabled: !nextCursor, onclick: next }, "Next →")));
  }

  function intParam(v, dflt, lo, hi) {
    var n = parseInt(v, 10);
    return isNaN(n) ? dflt : Math.max(lo, Math.min(hi, n));
  }

  function viewUsers(query) {
    var q = {
      prefix: query.prefix || "",
      policy: query.policy === "declared" || query.policy === "filter" ? query.policy : "",
      below: query.below || "",
      sort: query.sort || "user_id",
      limit: intParam(query.limit, 25, 1, 500),
    };
    var st = pageState(query);
    // the hash of the listing with ``changes``: the first page unless they name one
    function hashOf(changes) {
      var n = Object.assign({}, q, changes);
      return hashFor("/users", Object.assign({ prefix: n.prefix, policy: n.policy, below: n.below,
        sort: n.sort === "user_id" ? "" : n.sort, limit: n.limit === 25 ? "" : n.limit }, pageHash(n)));
    }
    function go(changes) { location.hash = hashOf(changes); }
    var params = { limit: q.limit, prefix: q.prefix, policy: q.policy, remaining_below: q.below, sort: q.sort };
    return api("/v1/users", Object.assign(params, pageParams(st)))
      .then(function (page) {
        var search = el("input", { id: "user-search", type: "search", placeholder: "User id starts with…", value: q.prefix, "aria-label": "search users by id prefix" });
        var timer = null;
        search.addEventListener("input", function () {
          clearTimeout(timer);
          var v = search.value;
          timer = setTimeout(function () { go({ prefix: v, offset: 0 }); }, 300);
        });
        var policy = el("select", { id: "policy-filter", onchange: function () { go({ policy: this.value, offset: 0 }); } },
          el("option", { value: "", text: "any" }), el("option", { value: "declared", text: "declared" }), el("option", { value: "filter", text: "filter" }));
        policy.value = q.policy;
        var below = el("input", { id: "remaining-below", type: "number", min: "0", step: "any", placeholder: "e.g. 0.5", value: q.below,
          onchange: function () { go({ below: this.value, offset: 0 }); } });
        var size = el("select", { id: "page-size", onchange: function () { go({ limit: parseInt(this.value, 10), offset: 0 }); } },
          PAGE_SIZES.map(function (n) { return el("option", { value: String(n), text: String(n) }); }));
        size.value = String(q.limit);

        function th(label, key, num) {
          if (!key) return el("th", { cls: num ? "num" : "", text: label });
          var cur = q.sort.replace(/^-/, "");
          var desc = q.sort.charAt(0) === "-";
          var cls = "sortable" + (num ? " num" : "") + (cur === key ? (desc ? " sorted-desc" : " sorted-asc") : "");
          return el("th", { cls: cls, "data-sort": key, "aria-sort": cur === key ? (desc ? "descending" : "ascending") : "none", text: label,
            onclick: function () {
              // the ledger sorts user ids ascending only
              var next = cur === key && !desc && key !== "user_id" ? "-" + key : key;
              go({ sort: next, offset: 0 });
            } });
        }
        var rows = page.items.map(function (u) {
          return el("tr", { "data-user": u.user_id },
            el("td", null, userLink(u.user_id)),
            el("td", null, policyBadge(u.policy)),
            el("td", { cls: "num", text: fmt(u.budget.epsilon) }),
            el("td", { cls: "num muted", text: fmt(u.budget.delta, 2) }),
            el("td", { cls: "num", text: fmt(u.spent.epsilon) }),
            el("td", { cls: "num" }, u.remaining_epsilon === 0 ? el("span", { cls: "badge zero", text: "0" }) : fmt(u.remaining_epsilon)),
            el("td", { cls: "num", text: fmtInt(u.charges) }),
            el("td", { text: fmtTime(u.last_charge_at) }));
        });
        return { nodes: [
          el("h1", { cls: "page", text: "Users" }),
          el("p", { cls: "subtitle", text: "Spent ε is at each budget's own δ; remaining ε is the budget ε minus it." }),
          el("div", { cls: "card" },
            el("div", { cls: "toolbar" },
              el("label", { cls: "grow" }, "Search", search),
              el("label", null, "Policy", policy),
              el("label", null, "Remaining ε below", below),
              el("label", null, "Per page", size)),
            el("div", { cls: "table-wrap" }, el("table", { id: "users-table" },
              el("thead", null, el("tr", null, th("User", "user_id"), th("Policy"), th("Budget ε", null, true), th("δ", null, true),
                th("Spent ε", "spent", true), th("Remaining ε", "remaining", true), th("Charges", null, true), th("Last charge", "last_charge"))),
              el("tbody", null, rows))),
            page.items.length ? null : el("div", { cls: "empty", text: "No users match." }),
            pager(page.total, st, q.limit, page.items.length, page.next_cursor, hashOf)),
        ] };
      });
  }

  // ------------------------------------------------------------------------------ one user
  function viewUser(id, query) {
    var climit = 25;
    var cst = pageState(query);
    var enc = encodeURIComponent(id).replace(/\./g, "%2E");
    var base = "/v1/users/" + enc;
    return Promise.all([
      api(base), api(base + "/history", { limit: 500 }), api(base + "/charges", Object.assign({ limit: climit }, pageParams(cst))),
      api(base + "/cohorts"), api(base + "/curve"),
    ]).then(function (res) {
      var u = res[0], hist = res[1], charges = res[2], mem = res[3], curve = res[4];
      var histBox = el("div", { cls: "chart", id: "history-chart" });
      var curveBox = el("div", { cls: "chart", id: "curve-chart" });
      var stats = [
        stat("Budget ε", fmt(u.budget.epsilon), "at δ = " + fmt(u.budget.delta, 2)),
        stat("Spent ε", fmt(u.spent.epsilon), u.spent.order === null ? "nothing spent yet" : "at Rényi order α = " + fmt(u.spent.order)),
        stat("Remaining ε", fmt(u.remaining_epsilon), null, u.remaining_epsilon === 0 ? "bad" : ""),
        stat("Charges", fmtInt(u.charges)),
      ];
      if (u.filter) stats.push(stat("Filter order α_f", fmt(u.filter.order), "B(α_f) = " + fmt(u.filter.order_budget)));

      var chargeRows = charges.charges.map(function (c) {
        return el("tr", null,
          el("td", { cls: "num", text: c.charge_id }),
          el("td", { text: fmtTime(c.created_at) }),
          el("td", { cls: "event", text: eventText(c.event) }),
          el("td", null, c.cohort ? [cohortLink(c.cohort), " round " + c.cohort_round] : el("span", { cls: "muted", text: fmtInt(c.users) + " user(s)" })),
          el("td", { text: c.charged_by.name + " (" + c.charged_by.role + ")" }));
      });
      var memRows = mem.memberships.map(function (m) {
        return el("tr", null, el("td", null, cohortLink(m.cohort_id)),
          el("td", { cls: "num", text: String(m.joined_after_round) }),
          el("td", { cls: "num", text: m.left_after_round === null ? "–" : String(m.left_after_round) }),
          el("td", { text: m.active ? "member" : "left" }));
      });
      function chargesHash(p) { return hashFor("/users/" + encodeURIComponent(id), pageHash(p)); }

      var nodes = [
        el("div", { cls: "crumbs" }, el("a", { href: "#/users", text: "Users" }), " / "),
        el("h1", { cls: "page", id: "user-title" }, id, " ", policyBadge(u.policy)),
        el("p", { cls: "subtitle", text: "Created " + fmtTime(u.created_at) + " · grid version " + u.grid_version }),
        el("div", { cls: "stats", id: "user-stats" }, stats),
        el("div", { cls: "grid two" },
          el("div", { cls: "card" }, el("h2", { text: "Spent ε over time" }), histBox,
            el("p", { cls: "chart-note", text: hist.points.length ? "ε at δ = " + fmt(u.budget.delta, 2) + " after each charge (" + fmtInt(hist.charges) + " charges" + (hist.points.length < hist.charges ? ", " + hist.points.length + " shown" : "") + "); the dashed line is the budget." : "No charges yet." })),
          el("div", { cls: "card" }, el("h2", { text: "Composed RDP curve against the budget" }), curveBox,
            el("p", { cls: "chart-note", text: curve.policy === "filter"
              ? "Rényi filter: a charge is admitted while spent ε(α_f) + its cost stays ≤ B(α_f) at α_f = " + fmt(curve.filter.order) + "."
              : "Declared policy: a charge is admitted if, at some order α, spent ε(α) + its cost stays ≤ B(α) (the budget curve)." }))),
        el("div", { cls: "card" }, el("h2", null, "Charge history ", el("span", { cls: "muted", text: "(oldest first)" })),
          charges.charges.length ? el("div", { cls: "table-wrap" }, el("table", { id: "charges-table" },
            el("thead", null, el("tr", null, el("th", { cls: "num", text: "Charge" }), el("th", { text: "When" }), el("th", { text: "Event" }),
              el("th", { text: "Through" }), el("th", { text: "Charged by" }))),
            el("tbody", null, chargeRows))) : el("div", { cls: "empty", text: "No charges yet." }),
          charges.total > climit ? pager(charges.total, cst, climit, charges.charges.length, charges.next_cursor, chargesHash) : null),
        el("div", { cls: "card" }, el("h2", { text: "Cohorts" }),
          mem.memberships.length ? el("div", { cls: "table-wrap" }, el("table", null,
            el("thead", null, el("tr", null, el("th", { text: "Cohort" }), el("th", { cls: "num", text: "Joined after round" }),
              el("th", { cls: "num", text: "Left after round" }), el("th", { text: "Status" }))),
            el("tbody", null, memRows))) : el("div", { cls: "empty", text: "Not a member of any cohort." })),
      ];
      return {
        nodes: nodes,
        after: function () {
          if (hist.points.length) {
            var xs = epochs(hist.points.map(function (p) { return p.at; }));
            var ys = hist.points.map(function (p) { return p.spent_epsilon; });
            var budget = hist.points.map(function () { return u.budget.epsilon; });
            chart(histBox, {
              x: { label: "Time (UTC)", time: true },
              y: { label: "ε at δ = " + fmt(u.budget.delta, 2), range: function (p, mn, mx) { return [0, Math.max(mx, u.budget.epsilon) * 1.1]; } },
              series: [
                { label: "spent ε", stroke: "#3b5bdb", width: 2, fill: "rgba(59,91,219,.08)", paths: uPlot.paths.stepped({ align: 1 }), points: { show: true, size: 5 } },
                { label: "budget ε", stroke: "#e03131", width: 1.5, dash: [6, 4], points: { show: false } },
              ],
            }, [xs, ys, budget]);
          }
          var finiteB = curve.budget_curve.filter(function (v) { return v !== null && v > 0; });
          var top = finiteB.length ? Math.max.apply(null, finiteB) : u.budget.epsilon;
          var binding = curve.orders.indexOf(u.spent.order);
          chart(curveBox, {
            legendAt: binding >= 0 ? binding : undefined,  // at rest: the order the spent ε is read at
            x: { label: "Rényi order α", log: true, value: function (p, v) { return v === null ? "–" : "α = " + fmt(v); } },
            y: { label: "RDP ε(α)", range: function () { return [0, top * 1.15]; } },
            series: [
              { label: "spent ε(α)", stroke: "#3b5bdb", width: 2, points: { show: false }, value: function (p, v, si, i) { return i === null || i === undefined ? "–" : fmt(v); } },
              { label: "budget B(α)", stroke: "#e03131", width: 1.5, dash: [6, 4], points: { show: false }, value: function (p, v, si, i) { return i === null || i === undefined ? "–" : fmt(v); } },
            ],
          }, [curve.orders, curve.spent, curve.budget_curve]);
        },
      };
    });
  }

  // ------------------------------------------------------------------------------ cohorts
  function viewCohorts(query) {
    var q = { prefix: query.prefix || "", limit: intParam(query.limit, 25, 1, 500) };
    var st = pageState(query);
    // the hash of the listing with ``changes``: the first page unless they name one
    function hashOf(changes) {
      var n = Object.assign({}, q, changes);
      return hashFor("/cohorts", Object.assign({ prefix: n.prefix, limit: n.limit === 25 ? "" : n.limit }, pageHash(n)));
    }
    function go(changes) { location.hash = hashOf(changes); }
    return api("/v1/cohorts", Object.assign({ limit: q.limit, prefix: q.prefix }, pageParams(st))).then(function (page) {
      var search = el("input", { id: "cohort-search", type: "search", placeholder: "Cohort id starts with…", value: q.prefix });
      var timer = null;
      search.addEventListener("input", function () {
        clearTimeout(timer);
        var v = search.value;
        timer = setTimeout(function () { go({ prefix: v, offset: 0 }); }, 300);
      });
      var rows = page.items.map(function (c) {
        return el("tr", null, el("td", null, cohortLink(c.cohort_id)), el("td", { cls: "wrap", text: c.description || "" }),
          el("td", { cls: "num", text: fmtInt(c.members) }), el("td", { cls: "num", text: fmtInt(c.rounds) }), el("td", { text: fmtTime(c.created_at) }));
      });
      return { nodes: [
        el("h1", { cls: "page", text: "Cohorts" }),
        el("p", { cls: "subtitle", text: "Populations charged together: a cohort charge reaches its members at the time of the charge." }),
        el("div", { cls: "card" },
          el("div", { cls: "toolbar" }, el("label", { cls: "grow" }, "Search", search)),
          el("div", { cls: "table-wrap" }, el("table", { id: "cohorts-table" },
            el("thead", null, el("tr", null, el("th", { text: "Cohort" }), el("th", { text: "Description" }), el("th", { cls: "num", text: "Members" }),
              el("th", { cls: "num", text: "Rounds" }), el("th", { text: "Created" }))),
            el("tbody", null, rows))),
          page.items.length ? null : el("div", { cls: "empty", text: "No cohorts match." }),
          pager(page.total, st, q.limit, page.items.length, page.next_cursor, hashOf)),
      ] };
    });
  }

  function viewCohort(id, query) {
    var mlimit = 25;
    var mst = pageState(query);
    var delta = query.delta || "";
    var base = "/v1/cohorts/" + encodeURIComponent(id).replace(/\./g, "%2E");
    return Promise.all([api(base), api(base + "/history", { delta: delta, limit: 500 }), api(base + "/members", Object.assign({ limit: mlimit }, pageParams(mst)))])
      .then(function (res) {
        var c = res[0], hist = res[1], members = res[2];
        var box = el("div", { cls: "chart", id: "cohort-chart" });
        var deltaSel = el("select", { id: "cohort-delta", onchange: function () { location.hash = hashFor("/cohorts/" + encodeURIComponent(id), { delta: this.value }); } },
          ["1e-5", "1e-6", "1e-8", "1e-10"].map(function (d) { return el("option", { value: d, text: "δ = " + d }); }));
        deltaSel.value = ["1e-5", "1e-6", "1e-8", "1e-10"].indexOf(delta) >= 0 ? delta : "1e-6";
        var rows = members.members.map(function (m) {
          return el("tr", null, el("td", null, userLink(m.user_id)), el("td", { cls: "num", text: String(m.joined_after_round) }),
            el("td", { text: fmtTime(m.joined_at) }));
        });
        function membersHash(p) { return hashFor("/cohorts/" + encodeURIComponent(id), Object.assign({ delta: delta }, pageHash(p))); }
        return {
          nodes: [
            el("div", { cls: "crumbs" }, el("a", { href: "#/cohorts", text: "Cohorts" }), " / "),
            el("h1", { cls: "page", id: "cohort-title", text: id }),
            el("p", { cls: "subtitle", text: c.description || "Created " + fmtTime(c.created_at) }),
            el("div", { cls: "stats" }, stat("Members", fmtInt(c.members)), stat("Rounds charged", fmtInt(c.rounds)),
              stat("Spent ε (first member)", hist.points.length ? fmt(hist.points[hist.points.length - 1].spent_epsilon) : "0", "at δ = " + fmt(hist.delta, 2))),
            el("div", { cls: "card" },
              el("div", { cls: "toolbar" }, el("h2", { cls: "grow", text: "Cumulative spent ε by round" }), deltaSel),
              hist.points.length ? box : el("div", { cls: "empty", text: "No rounds charged yet." }),
              el("p", { cls: "chart-note", text: "What a member present since the first round has spent through this cohort." })),
            el("div", { cls: "card" }, el("h2", { text: "Current members" }),
              members.members.length ? el("div", { cls: "table-wrap" }, el("table", { id: "members-table" },
                el("thead", null, el("tr", null, el("th", { text: "User" }), el("th", { cls: "num", text: "Joined after round" }), el("th", { text: "Joined" }))),
                el("tbody", null, rows))) : el("div", { cls: "empty", text: "No members." }),
              pager(c.members, mst, mlimit, members.members.length, members.next_cursor, membersHash)),
          ],
          after: function () {
            if (!hist.points.length) return;
            chart(box, {
              x: { label: "Cohort round", integer: true },
              y: { label: "ε at δ = " + fmt(hist.delta, 2), range: function (p, mn, mx) { return [0, mx * 1.1 || 1]; } },
              series: [{ label: "cumulative spent ε", stroke: "#3b5bdb", width: 2, fill: "rgba(59,91,219,.08)", points: { show: hist.points.length < 60, size: 5 } }],
            }, [hist.points.map(function (p) { return p.round; }), hist.points.map(function (p) { return p.spent_epsilon; })]);
          },
        };
      });
  }

  // ------------------------------------------------------------------------------ start
  function start() {
    $("login-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var k = $("api-key").value.trim();
      if (!k) return;
      setKey(k);
      $("api-key").value = "";
      api("/v1/summary", { buckets: 1 }).then(function () {
        if (!location.hash || location.hash === "#") location.hash = "#/"; else render();
      }).catch(function (e) {
        clearKey();
        showLogin(e instanceof AuthError ? "That key was not accepted (" + e.message + ")." : "Could not reach the service: " + e.message);
      });
    });
    $("logout").addEventListener("click", function () { clearKey(); location.hash = "#/"; showLogin(); });
    window.addEventListener("hashchange", render);
    render();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
