/*
 * Hummer dashboard: the JobManager's web front-end.
 *
 * Plain ES2020, no framework, no build step: the JobManager embeds this file (include_str!)
 * and serves it at /assets/app.js. Sections:
 *   1. DOM and formatting helpers
 *   2. API and polling
 *   3. Dialogs (REST token, confirmation)
 *   4. Router and shell
 *   5. Views (overview, jobs, job, checkpoints, taskmanagers, scheduling)
 *   6. Job graph (layered layout, SVG)
 *   7. Charts (SVG line charts)
 *
 * House rules: every piece of server data goes through textContent or setAttribute (never
 * innerHTML); nothing is logged to the console; no exception escapes (fetch failures become
 * the error banner, rendering failures a visible note). A view builds its DOM once and each
 * poll updates it in place, so buttons, dialogs and the graph stay the same elements.
 */
(() => {
  'use strict';

  // ─────────────────────────── 1. DOM and formatting helpers ───────────────────────────

  const POLL_MS = 1000;
  const REQUEST_TIMEOUT_MS = 8000;
  const ACTION_TIMEOUT_MS = 10 * 60 * 1000; // a savepoint of a large state may take minutes
  const MAX_CHART_SAMPLES = 300;
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const TOKEN_KEY = 'hummer-token';
  const JOB_STATES = ['Waiting', 'Deploying', 'Restarting', 'Running', 'Finished', 'Failed', 'Cancelled'];
  const ENDED = new Set(['Finished', 'Failed', 'Cancelled']);
  const END_OF_INPUT = 9.2e18; // watermarks at/above this mean "end of input" (i64::MAX)
  const PALETTE = ['#2563eb', '#16a34a', '#d97706', '#9333ea', '#db2777', '#0891b2', '#65a30d', '#dc2626'];

  const $ = (sel, root = document) => root.querySelector(sel);
  const isNum = (x) => typeof x === 'number' && Number.isFinite(x);
  const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));
  const pad2 = (n) => String(n).padStart(2, '0');
  const enc = encodeURIComponent;
  const jobHref = (id) => `#/jobs/${enc(id)}`;
  const tmHref = (id) => `#/taskmanagers/${enc(id)}`;

  function build(el, attrs, children) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') el.textContent = String(v);
      else if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : String(c)); // strings become text nodes: escaped
    }
    return el;
  }
  const h = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);
  const s = (tag, attrs, ...children) => build(document.createElementNS(SVG_NS, tag), attrs, children);

  // In-place updates only touch the DOM when something changed (cheap polls, stable selection).
  function setText(el, text) {
    const t = String(text);
    if (el.textContent !== t) el.textContent = t;
  }
  function setAttr(el, name, value) {
    if (value === null || value === undefined) {
      if (el.hasAttribute(name)) el.removeAttribute(name);
    } else if (el.getAttribute(name) !== String(value)) {
      el.setAttribute(name, String(value));
    }
  }
  function setField(el, text, value) {
    setText(el, text);
    setAttr(el, 'data-value', isNum(value) || typeof value === 'string' ? value : null);
  }
  function setClass(el, cls) { setAttr(el, 'class', cls); }
  const slug = (x) => String(x).toLowerCase().replace(/[^a-z0-9]+/g, '-');

  const INT_FMT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
  const fmtInt = (n) => (isNum(n) ? INT_FMT.format(n) : '—');
  const fmtRate = (r) => (!isNum(r) ? '—' : r >= 100 || r === 0 ? INT_FMT.format(r) : r.toFixed(1));
  const fmtCores = (c) => (!isNum(c) ? '—' : Number.isInteger(c) ? String(c) : c.toFixed(1));
  const trimZero = (str) => str.replace(/\.0+$/, '');

  function fmtPct(ratio) {
    if (!isNum(ratio)) return '—';
    const p = ratio * 100;
    return `${Math.abs(p) < 10 ? trimZero(p.toFixed(1)) : Math.round(p)}%`;
  }
  function fmtBytes(b) {
    if (!isNum(b)) return '—';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let i = 0;
    while (Math.abs(b) >= 1024 && i < units.length - 1) { b /= 1024; i += 1; }
    return i === 0 ? `${Math.round(b)} B` : `${b < 100 ? b.toFixed(1) : Math.round(b)} ${units[i]}`;
  }
  function fmtDuration(ms) {
    if (!isNum(ms)) return '—';
    ms = Math.max(0, ms);
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 10000) return `${trimZero((ms / 1000).toFixed(1))}s`;
    let sec = Math.floor(ms / 1000);
    const d = Math.floor(sec / 86400); sec -= d * 86400;
    const hr = Math.floor(sec / 3600); sec -= hr * 3600;
    const m = Math.floor(sec / 60); sec -= m * 60;
    if (d) return `${d}d ${hr}h`;
    if (hr) return `${hr}h ${m}m`;
    if (m) return `${m}m ${sec}s`;
    return `${sec}s`;
  }
  // Scheduler decision times are fractions of a millisecond.
  const fmtMillis = (ms) => (!isNum(ms) ? '—' : ms < 10 ? `${trimZero(ms.toFixed(2))} ms` : fmtDuration(ms));
  const validDate = (ms) => isNum(ms) && isNum(new Date(ms).getTime());
  function fmtDateTime(ms) {
    if (!validDate(ms)) return '—';
    const d = new Date(ms);
    return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${fmtClock(ms)}`;
  }
  function fmtClock(ms) {
    if (!validDate(ms)) return '—';
    const d = new Date(ms);
    return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
  }
  function fmtWatermark(wm) {
    if (wm === null || wm === undefined) return '—';
    if (!isNum(wm)) return String(wm);
    if (wm >= END_OF_INPUT) return 'end of input';
    return validDate(wm) ? new Date(wm).toISOString().replace('.000Z', 'Z') : String(wm);
  }
  const fmtLoad = (l) => (isNum(l) ? l.toFixed(2) : '—');
  const firstLine = (text) => String(text || '').split('\n')[0].trim();

  function badge(text, cls) { return h('span', { class: `badge ${cls}`, text }); }
  function setBadge(el, text, cls) { setText(el, text); setClass(el, `badge ${cls}`); }
  const stateCls = (state) => `state-${slug(state || 'unknown')}`;
  const regionCls = (region) => (region ? `region region-${slug(region)}` : 'region region-none');

  /**
   * Keyed reconciliation of a container's children: an element is kept (with its listeners,
   * focus and open <details>) as long as its key is present; only new keys create elements.
   * `empty` builds a placeholder shown when there are no items.
   */
  function syncChildren(parent, items, { key, create, update, empty }) {
    const old = parent.$keyed || new Map();
    const next = new Map();
    const els = [];
    for (const item of items) {
      let k = String(key(item));
      while (next.has(k)) k += '\u0000'; // duplicate keys still get their own element
      const el = old.get(k) || create(item);
      update(el, item);
      next.set(k, el);
      els.push(el);
    }
    for (const [k, el] of old) if (!next.has(k)) el.remove();
    parent.$keyed = next;
    if (empty && !parent.$empty) parent.$empty = empty();
    if (parent.$empty) {
      if (els.length) parent.$empty.remove();
      else if (parent.$empty.parentNode !== parent) parent.append(parent.$empty);
    }
    let ref = parent.firstChild;
    for (const el of els) {
      if (el === ref) ref = ref.nextSibling;
      else parent.insertBefore(el, ref);
    }
  }

  // Tables: a header built once, rows with one <td data-field> per column.
  function table(id, columns) {
    const tbody = h('tbody');
    const el = h('table', { id, class: 'data' },
      h('thead', null, h('tr', null, columns.map((c) =>
        h('th', { scope: 'col', class: c.num ? 'num' : null, title: c.help || null, text: c.label })))),
      tbody);
    return { el, tbody, columns, empty: (text) => () => h('tr', { class: 'empty' }, h('td', { colspan: columns.length, text })) };
  }
  function row(attrs, columns) {
    const tr = h('tr', attrs);
    tr.$c = {};
    for (const c of columns) {
      const td = h('td', { 'data-field': c.key, class: c.num ? 'num' : null });
      tr.$c[c.key] = td;
      tr.append(td);
    }
    return tr;
  }
  function cellLink(td, href, text, value) {
    if (!td.$a || td.$a.parentNode !== td) { td.$a = h('a'); td.replaceChildren(td.$a); } // a text may have replaced it
    setAttr(td.$a, 'href', href);
    setText(td.$a, text);
    setAttr(td, 'data-value', value);
  }
  function cellBadge(td, text, cls, value) {
    if (!td.$b) { td.$b = h('span'); td.replaceChildren(td.$b); }
    setBadge(td.$b, text, cls);
    setAttr(td, 'data-value', value);
  }
  // Percentage with a small bar; the bar carries no text, so the cell's text stays "42%".
  function cellPct(td, ratio) {
    if (!td.$t) {
      td.$t = h('span', { class: 'pct-text' });
      td.$f = h('span', { class: 'fill' });
      td.replaceChildren(td.$t, h('span', { class: 'minibar' }, td.$f));
      td.classList.add('pct');
    }
    setText(td.$t, fmtPct(ratio));
    td.$f.style.width = `${clamp(isNum(ratio) ? ratio : 0, 0, 1) * 100}%`;
    setAttr(td, 'data-value', isNum(ratio) ? ratio : null);
  }
  // A list of links rebuilt only when its content changes.
  function setLinks(el, items, sep = ', ', emptyText = '—') {
    const sig = JSON.stringify(items);
    if (el.$sig === sig) return;
    el.$sig = sig;
    const nodes = [];
    items.forEach((it, i) => {
      if (i) nodes.push(sep);
      nodes.push(h('a', { href: it.href, title: it.title || null, text: it.text }));
    });
    el.replaceChildren(...(nodes.length ? nodes : [emptyText]));
  }

  // ─────────────────────────────── 2. API and polling ───────────────────────────────

  let memoryToken = ''; // fallback when sessionStorage is blocked
  function getToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (_) { return memoryToken; }
  }
  function saveToken(token) {
    memoryToken = token;
    try {
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      else sessionStorage.removeItem(TOKEN_KEY);
    } catch (_) { /* storage blocked: memoryToken keeps it for this page */ }
  }

  /** One request; never throws. Resolves to {ok, status, data} or {ok:false, status, error}. */
  async function request(path, { method = 'GET', body, timeoutMs = REQUEST_TIMEOUT_MS } = {}) {
    const headers = { Accept: 'application/json' };
    const token = getToken();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), timeoutMs); // a hung JobManager must not freeze polling
    try {
      const res = await fetch(path, {
        method, headers, cache: 'no-store', signal: ctl.signal,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      let data = null;
      try { data = text ? JSON.parse(text) : {}; } catch (_) { data = null; }
      if (res.ok) {
        return data === null ? { ok: false, status: res.status, error: 'answer is not JSON' } : { ok: true, status: res.status, data };
      }
      const errors = data && Array.isArray(data.errors) && data.errors.length ? data.errors.map(String).join('; ') : '';
      return { ok: false, status: res.status, error: errors || `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}` };
    } catch (e) {
      const aborted = e && e.name === 'AbortError';
      return { ok: false, status: 0, error: aborted ? `no answer within ${Math.round(timeoutMs / 1000)} s` : `network error (${(e && e.message) || 'fetch failed'})` };
    } finally {
      clearTimeout(timer);
    }
  }

  const poll = { seq: 0, timer: 0, lastOk: 0, error: null, authNeeded: false, authPaused: false, authDismissed: false };
  let currentView = null;

  function schedule() {
    clearTimeout(poll.timer);
    poll.timer = setTimeout(tick, POLL_MS);
  }

  /** Fetches the current view's endpoints and hands them to its update(). Chained with setTimeout,
   *  so polls never overlap; a newer tick (route change, retry) makes an older one drop its result. */
  async function tick() {
    clearTimeout(poll.timer);
    const seq = ++poll.seq;
    const view = currentView;
    if (!view || poll.authPaused) return; // the token dialog restarts polling
    try {
      const results = await Promise.all(view.paths.map((p) => request(p)));
      if (seq !== poll.seq) return;
      const byPath = {};
      view.paths.forEach((p, i) => { byPath[p] = results[i]; });
      if (results.some((r) => r.status === 401)) {
        poll.authNeeded = true;
        poll.error = null;
        if (!poll.authDismissed) requireToken();
      } else {
        poll.authNeeded = false;
        // 404 is an answer (unknown job or TaskManager): the view shows it, not the banner.
        const failed = results.find((r) => !r.ok && r.status !== 404);
        if (failed) {
          poll.error = failed.error; // keep the last data on screen
        } else {
          poll.error = null;
          poll.lastOk = Date.now();
          renderView(view, byPath);
        }
      }
    } catch (e) {
      poll.error = `internal error: ${(e && e.message) || e}`;
    }
    renderStatus();
    if (seq === poll.seq && !poll.authPaused) schedule();
  }

  function renderView(view, byPath) {
    const note = $('#render-error');
    try {
      view.update(byPath);
      note.hidden = true;
    } catch (e) {
      // A bug or an unexpected answer must not kill the page: say so instead of throwing.
      setText(note, `Could not display this data: ${(e && e.message) || e}`);
      note.hidden = false;
    }
  }

  function renderStatus() {
    const banner = $('#error-banner');
    if (poll.error) {
      setText($('#error-reason'), poll.error);
      setText($('#error-last-ok'), poll.lastOk ? `· last successful update ${fmtDateTime(poll.lastOk)}` : '· no successful update yet');
      banner.hidden = false;
    } else {
      banner.hidden = true;
    }
    const ind = $('#last-updated');
    const state = poll.error ? 'error' : poll.authNeeded ? 'auth' : poll.lastOk ? 'ok' : 'pending';
    setAttr(ind, 'data-state', state);
    setAttr(ind, 'data-value', poll.lastOk || null);
    const at = fmtClock(poll.lastOk);
    setText($('#last-updated-text'), {
      error: poll.lastOk ? `Stale · last update ${at}` : 'Not connected',
      auth: 'Authentication required',
      ok: `Updated ${at}`,
      pending: 'Connecting…',
    }[state]);
    setAttr($('#token-button'), 'data-set', getToken() ? 'true' : 'false');
  }

  // ───────────────────────────────── 3. Dialogs ─────────────────────────────────

  let openModal = null; // {el, close()} of the modal on screen
  function showModal(el, focus, close) {
    const previous = document.activeElement;
    el.hidden = false;
    openModal = {
      el,
      close() {
        el.hidden = true;
        openModal = null;
        close();
        if (previous && previous.isConnected && typeof previous.focus === 'function') previous.focus();
      },
    };
    focus.focus();
  }
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && openModal) openModal.close();
  });
  for (const el of document.querySelectorAll('.modal')) {
    el.addEventListener('mousedown', (e) => { if (e.target === el && openModal) openModal.close(); });
  }

  /** Asks before a mutation; resolves true on OK. */
  const confirmDialog = (() => {
    const root = $('#confirm-dialog');
    const ok = $('#confirm-ok');
    const cancel = $('#confirm-cancel');
    let resolve = null;
    const finish = (answer) => {
      const r = resolve;
      resolve = null;
      if (r) r(answer);
    };
    ok.addEventListener('click', () => { const r = resolve; resolve = null; if (openModal) openModal.close(); if (r) r(true); });
    cancel.addEventListener('click', () => { if (openModal) openModal.close(); });
    return {
      ask({ title, text, okLabel, cancelLabel, danger }) {
        if (openModal) openModal.close();
        setText($('#confirm-title'), title);
        setText($('#confirm-text'), text);
        setText(ok, okLabel);
        setText(cancel, cancelLabel || 'Cancel');
        setClass(ok, danger ? 'btn btn-danger' : 'btn btn-primary');
        return new Promise((r) => {
          resolve = r;
          showModal(root, cancel, () => finish(false)); // focus the safe choice
        });
      },
    };
  })();

  /** The REST token dialog: shown on a 401, saves to sessionStorage and retries. */
  const tokenDialog = (() => {
    const root = $('#token-dialog');
    const form = $('#token-form');
    const input = $('#token-input');
    const retries = [];
    let saved = false;
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      saveToken(input.value.trim());
      input.value = '';
      saved = true;
      if (openModal) openModal.close();
    });
    $('#token-cancel').addEventListener('click', () => { if (openModal) openModal.close(); });
    function closed() {
      poll.authPaused = false;
      const todo = retries.splice(0);
      if (saved) {
        poll.authDismissed = false;
        for (const fn of todo) fn();
      } else if (poll.authNeeded) {
        poll.authDismissed = true; // don't pop up again every second; the Token button reopens
      }
      saved = false;
      renderStatus();
      tick();
    }
    return {
      open(retry) {
        if (retry) retries.push(retry);
        if (!root.hidden) return;
        if (openModal) openModal.close();
        setText($('#token-hint'), getToken()
          ? 'The JobManager refused the stored token. Enter the current one.'
          : 'The JobManager asks for a REST token.');
        saved = false;
        showModal(root, input, closed);
      },
    };
  })();

  function requireToken(retry) {
    poll.authPaused = true;
    tokenDialog.open(retry);
  }

  $('#token-button').addEventListener('click', () => requireToken());

  // ───────────────────────────── 4. Router and shell ─────────────────────────────

  const ROUTES = [
    { re: /^\/overview$/, nav: 'overview', make: () => overviewView() },
    { re: /^\/jobs$/, nav: 'jobs', make: () => jobsView() },
    { re: /^\/jobs\/([^/]+)$/, nav: 'jobs', make: (id) => jobView(id, 'graph') },
    { re: /^\/jobs\/([^/]+)\/checkpoints$/, nav: 'jobs', make: (id) => jobView(id, 'checkpoints') },
    { re: /^\/taskmanagers$/, nav: 'taskmanagers', make: () => taskManagersView() },
    { re: /^\/taskmanagers\/([^/]+)$/, nav: 'taskmanagers', make: (id) => taskManagerView(id) },
    { re: /^\/scheduling$/, nav: 'scheduling', make: () => schedulingView() },
  ];
  const decode = (x) => { try { return decodeURIComponent(x); } catch (_) { return x; } };

  function route() {
    const path = location.hash.replace(/^#/, '');
    let r = ROUTES.find((x) => x.re.test(path));
    let args = [];
    if (r) {
      args = r.re.exec(path).slice(1).map(decode);
    } else {
      r = ROUTES[0]; // unknown or empty hash: the overview, without a history entry
      if (location.hash !== '#/overview') history.replaceState(null, '', '#/overview');
    }
    const view = r.make(...args);
    currentView = view;
    $('#view').replaceChildren(view.el);
    $('#render-error').hidden = true;
    for (const a of document.querySelectorAll('a[data-nav]')) {
      const active = a.dataset.nav === r.nav;
      a.classList.toggle('active', active);
      setAttr(a, 'aria-current', active ? 'page' : null);
    }
    setCrumbs(view.crumbs);
    window.scrollTo(0, 0);
    tick();
  }

  /** Page title as breadcrumbs: [{text, href?}]. */
  function setCrumbs(crumbs) {
    const el = $('#page-title');
    const sig = JSON.stringify(crumbs);
    if (el.$sig === sig) return;
    el.$sig = sig;
    const parts = [];
    crumbs.forEach((c, i) => {
      if (i) parts.push(h('span', { class: 'crumb-sep', 'aria-hidden': 'true', text: '/' }));
      parts.push(c.href ? h('a', { href: c.href, text: c.text }) : h('span', { text: c.text }));
    });
    el.replaceChildren(...parts);
    document.title = `${crumbs[crumbs.length - 1].text} · Hummer`;
  }

  // ─────────────────────────────────── 5. Views ───────────────────────────────────
  // A view is {el, crumbs, paths, update(byPath)}: el is built once, update() runs each poll.

  const cardTitle = (text) => h('h2', { class: 'card-title', text });
  const notice = (text) => h('div', { class: 'notice', hidden: true, text });

  // Overview ─────────────────────────────────────────────
  function overviewView() {
    const f = {};
    const num = (key, cls) => (f[key] = h('span', { class: `value ${cls}`, 'data-field': key, text: '—' }));
    const bar = (key) => (f[`${key}:bar`] = h('span', { class: 'fill' }));
    const sub = (label, key) => h('div', { class: 'sub' }, h('span', { class: 'label', text: label }), num(key, 'small'));
    const stat = (title, ...body) => h('div', { class: 'card stat-card' }, cardTitle(title), ...body);
    const jobStates = ['running', 'waiting', 'restarting', 'finished', 'cancelled', 'failed'];

    const recent = table('recent-jobs', [
      { key: 'name', label: 'Name' }, { key: 'state', label: 'State' },
      { key: 'start-time', label: 'Started' }, { key: 'duration', label: 'Duration', num: true },
    ]);
    const el = h('section', { id: 'overview', class: 'view' },
      h('div', { class: 'cards' },
        stat('TaskManagers', num('taskmanagers', 'big'), sub('cores', 'cores-total'), sub('memory', 'memory-bytes-total')),
        stat('Slots', h('div', { class: 'big-line' }, num('slots-available', 'big'), h('span', { class: 'unit', text: 'free' })),
          h('div', { class: 'bar' }, bar('slots')), sub('used', 'slots-used'), sub('total', 'slots-total')),
        stat('CPU', num('cpu', 'big'), h('div', { class: 'bar' }, bar('cpu')), h('div', { class: 'sub muted', text: 'core-weighted, latest samples' })),
        stat('Memory', num('memory', 'big'), h('div', { class: 'bar' }, bar('memory')), h('div', { class: 'sub muted', text: 'of the TaskManagers\u2019 memory' })),
        stat('Scheduler', num('scheduler', 'big name'), sub('decision time', 'scheduler-time-ms'),
          h('div', { class: 'sub' }, h('a', { href: '#/scheduling', text: 'Scheduling details →' })))),
      h('div', { class: 'two-col jobs-row' },
        h('div', { class: 'card stat-card' }, cardTitle('Jobs'),
          h('div', { class: 'job-counts' }, jobStates.map((st) =>
            h('div', { class: `job-count ${stateCls(st)}` }, num(`jobs-${st}`, 'mid'), h('span', { class: 'label', text: st }))))),
        h('div', { class: 'card' }, h('div', { class: 'card-head' }, cardTitle('Recent jobs'), h('a', { href: '#/jobs', text: 'All jobs →' })),
          h('div', { class: 'table-scroll' }, recent.el))));

    const setNum = (key, n, text) => setField(f[key], text !== undefined ? text : fmtInt(n), n);
    const setBar = (key, ratio) => { f[`${key}:bar`].style.width = `${clamp(isNum(ratio) ? ratio : 0, 0, 1) * 100}%`; };

    return {
      el,
      crumbs: [{ text: 'Overview' }],
      paths: ['/overview', '/jobs'],
      update(res) {
        const o = res['/overview'].data || {};
        setNum('taskmanagers', o.taskmanagers);
        setNum('cores-total', o['cores-total'], fmtCores(o['cores-total']));
        setNum('memory-bytes-total', o['memory-bytes-total'], fmtBytes(o['memory-bytes-total']));
        const total = o['slots-total'];
        const free = o['slots-available'];
        const used = isNum(total) && isNum(free) ? total - free : null;
        setNum('slots-available', free);
        setNum('slots-total', total);
        setNum('slots-used', used);
        setBar('slots', total ? used / total : 0);
        for (const st of jobStates) setNum(`jobs-${st}`, o[`jobs-${st}`]);
        setNum('cpu', o.cpu, fmtPct(o.cpu));
        setBar('cpu', o.cpu);
        setNum('memory', o.memory, fmtPct(o.memory));
        setBar('memory', o.memory);
        setField(f.scheduler, o.scheduler || '—', o.scheduler || null);
        setNum('scheduler-time-ms', o['scheduler-time-ms'], fmtMillis(o['scheduler-time-ms']));

        const jobs = ((res['/jobs'].data || {}).jobs || []).slice()
          .sort((a, b) => (b['start-time'] || 0) - (a['start-time'] || 0)).slice(0, 6);
        syncChildren(recent.tbody, jobs, {
          key: (j) => j.id,
          create: (j) => row({ 'data-job-id': j.id }, recent.columns),
          update: (tr, j) => {
            setAttr(tr, 'data-state', j.status);
            cellLink(tr.$c.name, jobHref(j.id), j.name || j.id, j.id);
            cellBadge(tr.$c.state, j.status, stateCls(j.status), j.status);
            setField(tr.$c['start-time'], fmtDateTime(j['start-time']), j['start-time']);
            setField(tr.$c.duration, fmtDuration(j.duration), j.duration);
          },
          empty: recent.empty('No jobs submitted yet.'),
        });
      },
    };
  }

  // Jobs list ─────────────────────────────────────────────
  let jobsFilter = ''; // kept across visits of the list
  function jobsView() {
    const cols = [
      { key: 'name', label: 'Name' }, { key: 'id', label: 'ID' }, { key: 'status', label: 'State' },
      { key: 'start-time', label: 'Start time' }, { key: 'duration', label: 'Duration', num: true },
      { key: 'restarts', label: 'Restarts', num: true },
    ];
    const t = table('jobs-table', cols);
    const select = h('select', { id: 'job-state-filter', 'aria-label': 'Filter by state' },
      h('option', { value: '', text: 'All states' }),
      JOB_STATES.map((st) => h('option', { value: st, text: st })));
    select.value = jobsFilter;
    const count = h('span', { class: 'muted', id: 'jobs-count' });
    let last = null;
    function render() {
      if (!last) return;
      const all = (last.jobs || []).slice().sort((a, b) => (b['start-time'] || 0) - (a['start-time'] || 0));
      const shown = jobsFilter ? all.filter((j) => j.status === jobsFilter) : all;
      setText(count, jobsFilter ? `${shown.length} of ${all.length} jobs` : `${all.length} jobs`);
      syncChildren(t.tbody, shown, {
        key: (j) => j.id,
        create: (j) => row({ 'data-job-id': j.id }, cols),
        update: (tr, j) => {
          setAttr(tr, 'data-state', j.status);
          cellLink(tr.$c.name, jobHref(j.id), j.name || j.id, j.name || '');
          setField(tr.$c.id, j.id, j.id);
          cellBadge(tr.$c.status, j.status, stateCls(j.status), j.status);
          setField(tr.$c['start-time'], fmtDateTime(j['start-time']), j['start-time']);
          setField(tr.$c.duration, fmtDuration(j.duration), j.duration);
          setField(tr.$c.restarts, fmtInt(j.restarts), j.restarts);
        },
        empty: t.empty('No jobs match.'),
      });
    }
    select.addEventListener('change', () => { jobsFilter = select.value; render(); });
    const el = h('section', { id: 'jobs', class: 'view' },
      h('div', { class: 'card' },
        h('div', { class: 'toolbar' }, h('label', { for: 'job-state-filter', text: 'State' }), select, count),
        h('div', { class: 'table-scroll' }, t.el)));
    return {
      el,
      crumbs: [{ text: 'Jobs' }],
      paths: ['/jobs'],
      update(res) { last = res['/jobs'].data || {}; render(); },
    };
  }

  // Job actions ─────────────────────────────────────────────
  // Kept per job outside the view, so a savepoint still in flight shows as busy after navigating.
  const jobActions = new Map(); // job id -> {busy: kind|null, result: {state, text, code}|null}
  const ACTIONS = {
    cancel: {
      title: 'Cancel job?', ok: 'Cancel job', dismiss: 'Keep running', danger: true, method: 'PATCH', failed: 'Cancelling failed', button: 'Cancelling…',
      path: (id) => `/jobs/${enc(id)}`, body: undefined, timeoutMs: 30000, busy: 'Cancelling…',
      text: (name) => `Job "${name}" will be cancelled: all of its tasks stop now and it ends in state Cancelled. No savepoint is taken.`,
      done: () => ({ text: 'Cancellation requested.' }),
    },
    savepoint: {
      title: 'Trigger a savepoint?', ok: 'Take savepoint', dismiss: 'Cancel', danger: false, method: 'POST', failed: 'Savepoint failed', button: 'Taking savepoint…',
      path: (id) => `/jobs/${enc(id)}/savepoints`, body: { 'target-directory': null, 'cancel-job': false },
      timeoutMs: ACTION_TIMEOUT_MS, busy: 'Taking savepoint… this may take a few seconds.',
      text: (name) => `A savepoint of job "${name}" will be written to the cluster's default savepoint directory. The job keeps running.`,
      done: (d) => ({ text: 'Savepoint stored at ', code: String(d.location || '?') }),
    },
    stop: {
      title: 'Stop job with a savepoint?', ok: 'Stop job', dismiss: 'Keep running', danger: true, method: 'POST', failed: 'Stopping failed', button: 'Stopping…',
      path: (id) => `/jobs/${enc(id)}/stop`, body: { 'target-directory': null },
      timeoutMs: ACTION_TIMEOUT_MS, busy: 'Stopping: taking the final savepoint…',
      text: (name) => `Job "${name}" will be stopped: a savepoint is written to the cluster's default savepoint directory, then the job is cancelled.`,
      done: (d) => ({ text: 'Job stopped; savepoint stored at ', code: String(d.location || '?') }),
    },
  };
  function actionState(id) {
    if (!jobActions.has(id)) jobActions.set(id, { busy: null, result: null });
    return jobActions.get(id);
  }
  async function performAction(jobId, kind) {
    const spec = ACTIONS[kind];
    const st = actionState(jobId);
    st.busy = kind;
    st.result = { state: 'busy', text: spec.busy };
    refreshActions();
    const res = await request(spec.path(jobId), { method: spec.method, body: spec.body, timeoutMs: spec.timeoutMs });
    st.busy = null;
    if (res.status === 401) {
      st.result = { state: 'error', text: 'Authentication required: enter the REST token to retry.' };
      requireToken(() => { performAction(jobId, kind); });
    } else if (res.ok) {
      st.result = { state: 'ok', ...spec.done(res.data || {}) };
    } else {
      st.result = { state: 'error', text: `${spec.failed}: ${res.error}` };
    }
    refreshActions();
    if (!poll.authPaused) tick(); // show the new job state right away
  }
  function refreshActions() {
    if (currentView && currentView.refreshActions) currentView.refreshActions();
  }

  // Rates and ratios from two successive polls (see the REST contract).
  const metricsCache = new Map(); // job id -> {now, raw, computed}
  function counters(m) {
    return { read: m['read-records'], write: m['write-records'], busy: m['busy-ns'], idle: m['idle-ns'], bp: m['backpressured-ns'] };
  }
  function deltaRatios(cur, prev) {
    if (!prev) return null;
    const db = cur.busy - prev.busy;
    const di = cur.idle - prev.idle;
    const dp = cur.bp - prev.bp;
    const tot = db + di + dp;
    return tot > 0 && db >= 0 && di >= 0 && dp >= 0 ? { busy: db / tot, bp: dp / tot } : null;
  }
  function lifetimeRatios(c) {
    const tot = c.busy + c.idle + c.bp;
    return tot > 0 ? { busy: c.busy / tot, bp: c.bp / tot } : { busy: null, bp: null };
  }
  function jobMetrics(job) {
    const now = isNum(job.now) ? job.now : Date.now();
    const cached = metricsCache.get(job.jid);
    if (cached && cached.now === now) return cached.computed; // same snapshot: keep the last rates
    const dt = cached ? (now - cached.now) / 1000 : 0;
    const raw = new Map();
    const computed = new Map();
    for (const v of job.vertices || []) {
      const vid = String(v.id);
      const m = v.metrics || {};
      const cur = counters(m);
      const subs = new Map((v.subtasks || []).map((st) => [st.subtask, counters(st)]));
      raw.set(vid, { cur, subs });
      const prev = cached && cached.raw.get(vid);
      const rate = (a, b) => (prev && dt > 0 && isNum(a) && isNum(b) && a >= b ? (a - b) / dt : null);
      const ratios = deltaRatios(cur, prev && prev.cur) ||
        (isNum(m['busy-ratio']) ? { busy: m['busy-ratio'], bp: m['backpressure-ratio'] } : lifetimeRatios(cur));
      const subRatios = new Map();
      for (const [i, c] of subs) subRatios.set(i, deltaRatios(c, prev && prev.subs.get(i)) || lifetimeRatios(c));
      computed.set(vid, {
        rateIn: rate(cur.read, prev && prev.cur.read),
        rateOut: rate(cur.write, prev && prev.cur.write),
        busy: ratios.busy, bp: ratios.bp, subtasks: subRatios,
      });
    }
    metricsCache.set(job.jid, { now, raw, computed });
    if (metricsCache.size > 20) metricsCache.delete(metricsCache.keys().next().value);
    return computed;
  }

  // Job header: shared by the graph and the checkpoints tab.
  function jobHeader(jobId, tab) {
    const f = {};
    const fact = (label, key, node) => h('div', { class: 'fact' }, h('span', { class: 'label', text: label }),
      (f[key] = node || h('span', { 'data-field': key, text: '—' })));
    const btn = (id, text, cls, kind) => h('button', { id, type: 'button', class: `btn ${cls}`, disabled: true, text, onclick: () => ask(kind) });
    const buttons = {
      savepoint: btn('savepoint-job', 'Savepoint', 'btn-secondary', 'savepoint'),
      stop: btn('stop-job', 'Stop with savepoint', 'btn-secondary', 'stop'),
      cancel: btn('cancel-job', 'Cancel job', 'btn-danger-outline', 'cancel'),
    };
    const labels = { savepoint: 'Savepoint', stop: 'Stop with savepoint', cancel: 'Cancel job' };
    const result = h('div', { id: 'action-result', role: 'status', 'aria-live': 'polite', hidden: true });
    f.name = h('h1', { class: 'job-name', 'data-field': 'name', text: jobId });
    f.state = h('span', { class: 'badge', 'data-field': 'state', text: '…' });
    f.jid = h('code', { 'data-field': 'jid', text: jobId });
    f.kind = h('span', { class: 'muted', 'data-field': 'streaming' });
    f.error = h('div', { class: 'job-error', 'data-field': 'error', hidden: true });
    f.sql = h('pre', { class: 'job-sql', 'data-field': 'sql', 'aria-label': 'SQL statement', hidden: true });
    const tabs = h('nav', { class: 'tabs', 'aria-label': 'Job views' },
      h('a', { href: jobHref(jobId), class: tab === 'graph' ? 'tab active' : 'tab', 'aria-current': tab === 'graph' ? 'page' : null, text: 'Graph & metrics' }),
      h('a', { href: `${jobHref(jobId)}/checkpoints`, class: tab === 'checkpoints' ? 'tab active' : 'tab', 'aria-current': tab === 'checkpoints' ? 'page' : null, text: 'Checkpoints & exceptions' }));
    const el = h('div', { id: 'job-header', class: 'card job-header' },
      h('div', { class: 'job-title-row' },
        h('div', { class: 'job-title' }, f.name, f.state),
        h('div', { class: 'actions' }, buttons.savepoint, buttons.stop, buttons.cancel)),
      h('div', { class: 'job-id-line' }, f.jid, f.kind),
      h('div', { class: 'facts-row' },
        fact('Start', 'start-time'), fact('End', 'end-time'), fact('Duration', 'duration'),
        fact('Restarts', 'restarts'), fact('Attempt', 'attempt'), fact('Priority', 'priority'),
        fact('Placement', 'placement'), fact('Queued on', 'queuedOn')),
      f.sql, f.error, result, tabs);
    let job = null;

    async function ask(kind) {
      if (!job) return;
      const spec = ACTIONS[kind];
      const ok = await confirmDialog.ask({
        title: spec.title, text: spec.text(job.name || jobId), okLabel: spec.ok, cancelLabel: spec.dismiss, danger: spec.danger,
      });
      if (ok) performAction(jobId, kind);
    }
    function renderActions() {
      const st = actionState(jobId);
      const ended = !job || ENDED.has(job.state);
      for (const [kind, b] of Object.entries(buttons)) {
        b.disabled = ended || st.busy !== null;
        const busy = st.busy === kind;
        b.classList.toggle('busy', busy);
        setAttr(b, 'aria-busy', busy ? 'true' : null);
        setText(b, busy ? ACTIONS[kind].button : labels[kind]);
        setAttr(b, 'title', ended && job ? `The job has ended (${job.state}).` : null);
      }
      const r = st.result;
      result.hidden = !r;
      if (r) {
        setAttr(result, 'data-state', r.state);
        setClass(result, `action-result ${r.state}`);
        const sig = JSON.stringify(r);
        if (result.$sig !== sig) {
          result.$sig = sig;
          result.replaceChildren(...[r.state === 'busy' ? h('span', { class: 'spinner', 'aria-hidden': 'true' }) : null,
            r.text, r.code ? h('code', { text: r.code }) : null].filter((x) => x !== null));
        }
      }
    }
    return {
      el,
      renderActions,
      update(j) {
        job = j;
        setText(f.name, j.name || jobId);
        setBadge(f.state, j.state, stateCls(j.state));
        setAttr(f.state, 'data-value', j.state);
        setField(f.jid, j.jid || jobId, j.jid || jobId);
        setText(f.kind, j.streaming === false ? 'batch' : 'streaming');
        setField(f['start-time'], fmtDateTime(j['start-time']), j['start-time']);
        setField(f['end-time'], j['end-time'] ? fmtDateTime(j['end-time']) : '—', j['end-time']);
        setField(f.duration, fmtDuration(j.duration), j.duration);
        setField(f.restarts, fmtInt(j.restarts), j.restarts);
        setField(f.attempt, fmtInt(j.attempt), j.attempt);
        setField(f.priority, isNum(j.priority) ? String(j.priority) : '—', j.priority);
        setLinks(f.placement, (j.placement || []).map((tm) => ({ href: tmHref(tm), text: tm })));
        setLinks(f.queuedOn, j.queuedOn ? [{ href: tmHref(j.queuedOn), text: j.queuedOn }] : []);
        f.sql.hidden = !j.sql;
        setText(f.sql, j.sql || '');
        f.error.hidden = !j.error;
        setText(f.error, j.error || '');
        renderActions();
      },
    };
  }

  function jobView(jobId, tab) {
    const base = `/jobs/${enc(jobId)}`;
    const header = jobHeader(jobId, tab);
    const body = tab === 'checkpoints' ? checkpointsPanel(jobId, base) : graphPanel(jobId, base);
    const missing = notice(`No job with id ${jobId}. It may never have existed or may have been removed.`);
    const el = h('section', { id: tab === 'checkpoints' ? 'job-checkpoints' : 'job', class: 'view' }, missing, header.el, body.el);
    const crumbs = (name) => [{ text: 'Jobs', href: '#/jobs' }, ...(tab === 'checkpoints'
      ? [{ text: name, href: jobHref(jobId) }, { text: 'Checkpoints' }] : [{ text: name }])];
    const view = {
      el,
      crumbs: crumbs(jobId),
      paths: [base, ...body.paths],
      refreshActions: header.renderActions,
      update(res) {
        const jr = res[base];
        missing.hidden = jr.status !== 404;
        header.el.hidden = body.el.hidden = jr.status === 404;
        if (!jr.ok) return;
        const job = jr.data;
        setCrumbs(crumbs(job.name || jobId));
        header.update(job);
        body.update(res, job);
      },
    };
    return view;
  }

  function graphPanel(jobId, base) {
    let selected = null;
    let job = null;
    let metrics = new Map();
    const graph = createJobGraph((id) => select(id));
    const vcols = [
      { key: 'name', label: 'Vertex' }, { key: 'parallelism', label: 'Parallelism', num: true },
      { key: 'read-records', label: 'Records in', num: true }, { key: 'write-records', label: 'Records out', num: true },
      { key: 'rate-in', label: 'In/s', num: true }, { key: 'rate-out', label: 'Out/s', num: true },
      { key: 'busy', label: 'Busy' }, { key: 'backpressure', label: 'Backpressure' }, { key: 'watermark', label: 'Watermark' },
    ];
        const scols = [
      { key: 'subtask', label: 'Subtask', num: true }, { key: 'taskmanager', label: 'TaskManager' },
      { key: 'read-records', label: 'Records in', num: true }, { key: 'write-records', label: 'Records out', num: true },
      { key: 'busy', label: 'Busy' }, { key: 'backpressure', label: 'Backpressure' }, { key: 'watermark', label: 'Watermark' },
      { key: 'state-in-memory', label: 'State in memory', num: true }, { key: 'state-on-disk', label: 'State on disk', num: true },
      { key: 'state-disk-bytes', label: 'Disk bytes', num: true }, { key: 'state-disk-hit-ratio', label: 'Disk hits' },
      { key: 'checkpointed-size', label: 'Last checkpoint', num: true },
    ];
    const vt = table('vertex-table', vcols);
    const st = table('subtask-table', scols);
    const subTitle = h('h2', { class: 'card-title plain' });
    const subSection = h('div', { id: 'subtasks', class: 'card', hidden: true },
      h('div', { class: 'card-head' }, subTitle,
        h('button', { type: 'button', class: 'btn btn-small', text: 'Close', onclick: () => select(null) })),
      h('div', { class: 'table-scroll' }, st.el));
    const exc = {
      none: h('p', { class: 'muted', text: 'No exceptions.' }),
      root: h('strong', { class: 'root-cause', 'data-field': 'root-exception' }),
      meta: h('span', { class: 'muted' }),
    };
    const excBox = h('div', { class: 'exception-latest', hidden: true }, exc.root, ' ', exc.meta);
    const el = h('div', { class: 'job-body' },
      h('div', { class: 'card' }, h('div', { class: 'card-head' }, cardTitle('Job graph'),
        h('span', { class: 'muted', text: 'Click a vertex for its subtasks.' })), graph.el, graph.legend),
      h('div', { class: 'card' }, cardTitle('Vertices'), h('div', { class: 'table-scroll' }, vt.el)),
      subSection,
      h('div', { class: 'card', id: 'exception-summary' },
        h('div', { class: 'card-head' }, cardTitle('Latest exception'),
          h('a', { href: `${jobHref(jobId)}/checkpoints`, text: 'Checkpoints & exception history →' })),
        exc.none, excBox));

    function select(id) {
      selected = id === null ? null : String(id);
      render();
      if (selected !== null) subSection.scrollIntoView({ block: 'nearest' });
    }
    function render() {
      if (!job) return;
      const vertices = job.vertices || [];
      if (selected !== null && !vertices.some((v) => String(v.id) === selected)) selected = null;
      graph.update(job, metrics, selected);
      syncChildren(vt.tbody, vertices, {
        key: (v) => v.id,
        create: (v) => {
          const tr = row({ 'data-vertex': v.id, tabindex: 0, class: 'clickable' }, vcols);
          tr.addEventListener('click', () => select(v.id));
          tr.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); select(v.id); } });
          return tr;
        },
        update: (tr, v) => {
          const m = metrics.get(String(v.id)) || {};
          const c = tr.$c;
          tr.classList.toggle('selected', String(v.id) === selected);
          setField(c.name, v.name || `vertex ${v.id}`, v.name || '');
          setAttr(c.name, 'title', (v.operators || []).join(' → ') || null);
          setField(c.parallelism, fmtInt(v.parallelism), v.parallelism);
          setField(c['read-records'], fmtInt((v.metrics || {})['read-records']), (v.metrics || {})['read-records']);
          setField(c['write-records'], fmtInt((v.metrics || {})['write-records']), (v.metrics || {})['write-records']);
          setField(c['rate-in'], fmtRate(m.rateIn), m.rateIn);
          setField(c['rate-out'], fmtRate(m.rateOut), m.rateOut);
          cellPct(c.busy, m.busy);
          cellPct(c.backpressure, m.bp);
          setField(c.watermark, fmtWatermark(v.watermark), v.watermark);
        },
        empty: vt.empty('This job has no vertices yet.'),
      });
      const v = vertices.find((x) => String(x.id) === selected);
      subSection.hidden = !v;
      if (!v) return;
      setText(subTitle, `Subtasks of ${v.name || `vertex ${v.id}`}`);
      const ratios = (metrics.get(String(v.id)) || {}).subtasks || new Map();
      syncChildren(st.tbody, v.subtasks || [], {
        key: (x) => `${v.id}/${x.subtask}`,
        create: (x) => row({ 'data-subtask': x.subtask }, scols),
        update: (tr, x) => {
          const r = ratios.get(x.subtask) || {};
          const c = tr.$c;
          setField(c.subtask, String(x.subtask), x.subtask);
          if (x.taskmanager) cellLink(c.taskmanager, tmHref(x.taskmanager), x.taskmanager, x.taskmanager);
          else setField(c.taskmanager, '—', null);
          setField(c['read-records'], fmtInt(x['read-records']), x['read-records']);
          setField(c['write-records'], fmtInt(x['write-records']), x['write-records']);
          cellPct(c.busy, r.busy);
          cellPct(c.backpressure, r.bp);
                    setField(c.watermark, fmtWatermark(x.watermark), x.watermark);
          setField(c['state-in-memory'], fmtInt(x['state-in-memory']), x['state-in-memory']);
          setField(c['state-on-disk'], fmtInt(x['state-on-disk']), x['state-on-disk']);
          setField(c['state-disk-bytes'], fmtInt(x['state-disk-bytes']), x['state-disk-bytes']);
          cellPct(c['state-disk-hit-ratio'], x['state-disk-hit-ratio']);
          setField(c['checkpointed-size'], fmtBytes(x['checkpointed-size']), x['checkpointed-size']);
        },
        empty: st.empty('No subtasks deployed.'),
      });
    }
    return {
      el,
      paths: [`${base}/exceptions`],
      update(res, j) {
        job = j;
        metrics = jobMetrics(j);
        render();
        const ex = res[`${base}/exceptions`];
        const e = ex.ok ? ex.data : {};
        const latest = (e.history || [])[0];
        const text = latest ? latest['root-cause'] || firstLine(latest.exception) : firstLine(e['root-exception']);
        exc.none.hidden = !!text;
        excBox.hidden = !text;
        if (text) {
          setText(exc.root, text);
          const where = latest ? [latest.operator, isNum(latest.subtask) ? `subtask ${latest.subtask}` : null, latest.taskmanager].filter(Boolean).join(' · ') : '';
          setText(exc.meta, [where, fmtDateTime(latest ? latest.timestamp : e.timestamp)].filter((x) => x && x !== '—').join(' · '));
        }
      },
    };
  }

  function checkpointsPanel(jobId, base) {
    const countKeys = [['completed', 'Completed'], ['in_progress', 'In progress'], ['failed', 'Failed'], ['total', 'Total'], ['restarts', 'Restarts']];
    const counts = {};
    const countsEl = h('div', { id: 'checkpoint-counts', class: 'cards' }, countKeys.map(([k, label]) =>
      h('div', { class: `card stat-card small cp-${slug(k)}` }, cardTitle(label), (counts[k] = h('span', { class: 'value big', 'data-field': k, text: '—' })))));
    const latest = { completed: latestCard('latest-completed', 'Latest completed', false), failed: latestCard('latest-failed', 'Latest failed', true) };
    const cols = [
      { key: 'id', label: 'ID', num: true }, { key: 'status', label: 'Status' }, { key: 'trigger_timestamp', label: 'Triggered' },
      { key: 'end_to_end_duration', label: 'Duration', num: true }, { key: 'state_size', label: 'Size', num: true },
      { key: 'checkpointed_size', label: 'Written', num: true }, { key: 'alignment_duration', label: 'Alignment', num: true }, { key: 'failure_message', label: 'Failure' },
    ];
    const hist = table('checkpoint-history', cols);
    const restarts = h('span', { 'data-field': 'restarts', text: '—' });
    const excList = h('ol', { id: 'exception-history', class: 'exception-list' });
    const el = h('div', { class: 'job-body' },
      countsEl,
      h('div', { class: 'two-col' }, latest.completed.el, latest.failed.el),
      h('div', { class: 'card' }, cardTitle('Checkpoint history'), h('div', { class: 'table-scroll tall' }, hist.el)),
      h('section', { id: 'exceptions', class: 'card' },
        h('div', { class: 'card-head' }, cardTitle('Exceptions'), h('span', { class: 'muted' }, 'Restarts: ', restarts)),
        excList));

    function latestCard(id, title, failed) {
      const f = {};
      const item = (label, key) => [h('dt', { text: label }), (f[key] = h('dd', { 'data-field': key, text: '—' }))];
      const none = h('p', { class: 'muted', text: 'None yet.' });
      const dl = h('dl', { class: 'facts', hidden: true }, item('ID', 'id'), item('Triggered', 'trigger_timestamp'),
        failed ? item('Failure', 'failure_message') : [item('Duration', 'end_to_end_duration'), item('Size', 'state_size')]);
      return {
        el: h('div', { class: `card latest ${failed ? 'latest-failed' : 'latest-completed'}`, id }, cardTitle(title), none, dl),
        update(c) {
          none.hidden = !!c;
          dl.hidden = !c;
          if (!c) return;
          setField(f.id, `#${c.id}`, c.id);
          setField(f.trigger_timestamp, fmtDateTime(c.trigger_timestamp), c.trigger_timestamp);
          if (failed) setField(f.failure_message, c.failure_message || '—', c.failure_message || null);
          else {
            setField(f.end_to_end_duration, fmtDuration(c.end_to_end_duration), c.end_to_end_duration);
            setField(f.state_size, fmtBytes(c.state_size), c.state_size);
          }
        },
      };
    }
    function exceptionItem() {
      const li = h('li', { class: 'exception' });
      li.$root = h('strong', { class: 'root-cause', 'data-field': 'root-cause' });
      li.$meta = h('div', { class: 'exception-meta' });
      li.$pre = h('pre', { class: 'exception-text', 'data-field': 'exception' });
      li.append(li.$root, li.$meta, h('details', null, h('summary', { text: 'Full text' }), li.$pre));
      return li;
    }
    function updateException(li, x) {
      setAttr(li, 'data-timestamp', x.timestamp);
      setAttr(li, 'data-outcome', x.outcome || null);
      setText(li.$root, x['root-cause'] || firstLine(x.exception) || 'unknown error');
      setText(li.$pre, x.exception || x['root-cause'] || '');
      const sig = JSON.stringify([x.operator, x.subtask, x.taskmanager, x.timestamp, x.attempt, x.outcome]);
      if (li.$meta.$sig === sig) return;
      li.$meta.$sig = sig;
      const part = (label, ...value) => h('span', { class: 'meta-item' }, h('span', { class: 'label', text: label }), ...value);
      li.$meta.replaceChildren(...[
        x.operator ? part('operator', x.operator) : null,
        isNum(x.subtask) ? part('subtask', String(x.subtask)) : null,
        x.taskmanager ? part('taskmanager', h('a', { href: tmHref(x.taskmanager), text: x.taskmanager })) : null,
        part('time', fmtDateTime(x.timestamp)),
        isNum(x.attempt) ? part('attempt', String(x.attempt)) : null,
        x.outcome ? badge(x.outcome, `outcome-${slug(x.outcome)}`) : null,
      ].filter(Boolean));
    }
    return {
      el,
      paths: [`${base}/checkpoints`, `${base}/exceptions`],
      update(res, job) {
        const cr = res[`${base}/checkpoints`];
        const cp = cr.ok ? cr.data : {};
        const c = cp.counts || {};
        for (const [k] of countKeys) setField(counts[k], fmtInt(c[k]), c[k]);
        latest.completed.update((cp.latest || {}).completed || null);
        latest.failed.update((cp.latest || {}).failed || null);
        syncChildren(hist.tbody, cp.history || [], {
          key: (r) => r.id,
          create: (r) => row({ 'data-checkpoint-id': r.id }, cols),
          update: (tr, r) => {
            setAttr(tr, 'data-status', r.status);
            const t = tr.$c;
            setField(t.id, `#${r.id}${r.is_final ? ' (final)' : ''}`, r.id);
            cellBadge(t.status, String(r.status || '').replace('_', ' ').toLowerCase(), `cp-${slug(r.status || '')}`, r.status);
            setField(t.trigger_timestamp, fmtDateTime(r.trigger_timestamp), r.trigger_timestamp);
            setField(t.end_to_end_duration, fmtDuration(r.end_to_end_duration), r.end_to_end_duration);
            setField(t.state_size, fmtBytes(r.state_size), r.state_size);
            setField(t.checkpointed_size, fmtBytes(r.checkpointed_size), r.checkpointed_size);
            setField(t.alignment_duration, fmtDuration(r.alignment_duration), r.alignment_duration);
            setField(t.failure_message, r.failure_message || '', r.failure_message || null);
          },
          empty: hist.empty(cr.status === 404 ? 'No checkpoint information for this job.' : 'No checkpoints yet.'),
        });
        setField(restarts, fmtInt(job.restarts), job.restarts);
        const er = res[`${base}/exceptions`];
        const ex = er.ok ? er.data : {};
        let items = ex.history || [];
        if (!items.length && ex['root-exception']) {
          items = [{ timestamp: ex.timestamp, 'root-cause': firstLine(ex['root-exception']), exception: ex['root-exception'] }];
        }
        syncChildren(excList, items, {
          key: (x) => `${x.timestamp}|${x.attempt}|${x['root-cause']}`,
          create: exceptionItem,
          update: updateException,
          empty: () => h('li', { class: 'empty muted', text: 'No exceptions.' }),
        });
      },
    };
  }

  // TaskManagers ─────────────────────────────────────────────
  function taskManagersView() {
    const cols = [
      { key: 'id', label: 'TaskManager' }, { key: 'slots', label: 'Slots used', num: true }, { key: 'freeSlots', label: 'Free', num: true },
      { key: 'cores', label: 'Cores', num: true }, { key: 'memoryBytes', label: 'Memory', num: true },
      { key: 'cpuLoad', label: 'CPU' }, { key: 'memoryLoad', label: 'Memory used' },
      { key: 'timeSinceLastHeartbeatMs', label: 'Heartbeat', num: true, help: 'Time since the last heartbeat' },
      { key: 'region', label: 'Region' }, { key: 'workers', label: 'Workers' },
    ];
    const t = table('taskmanagers-table', cols);
    return {
      el: h('section', { id: 'taskmanagers', class: 'view' }, h('div', { class: 'card' }, h('div', { class: 'table-scroll' }, t.el))),
      crumbs: [{ text: 'TaskManagers' }],
      paths: ['/taskmanagers'],
      update(res) {
        const tms = ((res['/taskmanagers'].data || {}).taskmanagers || []).slice().sort((a, b) => String(a.id).localeCompare(String(b.id)));
        syncChildren(t.tbody, tms, {
          key: (tm) => tm.id,
          create: (tm) => row({ 'data-taskmanager': tm.id }, cols),
          update: (tr, tm) => updateTaskManagerRow(tr.$c, tm),
          empty: t.empty('No TaskManager registered.'),
        });
      },
    };
  }
  function updateTaskManagerRow(c, tm) {
    const used = isNum(tm.slotsNumber) && isNum(tm.freeSlots) ? tm.slotsNumber - tm.freeSlots : null;
    cellLink(c.id, tmHref(tm.id), tm.id, tm.id);
    setField(c.slots, `${fmtInt(used)} / ${fmtInt(tm.slotsNumber)}`, used);
    setField(c.freeSlots, fmtInt(tm.freeSlots), tm.freeSlots);
    setField(c.cores, fmtCores(tm.cores), tm.cores);
    setField(c.memoryBytes, fmtBytes(tm.memoryBytes), tm.memoryBytes);
    cellPct(c.cpuLoad, tm.cpuLoad);
    cellPct(c.memoryLoad, tm.memoryLoad);
    setField(c.timeSinceLastHeartbeatMs, fmtDuration(tm.timeSinceLastHeartbeatMs), tm.timeSinceLastHeartbeatMs);
    c.timeSinceLastHeartbeatMs.classList.toggle('stale', isNum(tm.timeSinceLastHeartbeatMs) && tm.timeSinceLastHeartbeatMs > 10000);
    cellBadge(c.region, tm.region || '—', regionCls(tm.region), tm.region || '');
    setLinks(c.workers, (tm.workers || []).map((w) => ({ href: jobHref(w.job), text: `${w.name || w.job} ×${w.subtasks}`, title: `${w.subtasks} subtasks of job ${w.job}` })));
  }

  function taskManagerView(tmId) {
    const f = {};
    const item = (label, key) => [h('dt', { text: label }), (f[key] = h('dd', { 'data-field': key, text: '—' }))];
    const missing = notice(`No TaskManager with id ${tmId} is registered.`);
    const cpu = createChart('cpu', 'CPU utilisation over time');
    const mem = createChart('memory', 'Memory utilisation over time');
    const workers = h('ul', { id: 'tm-workers', class: 'plain-list' });
    const content = h('div', { class: 'tm-body' },
      h('div', { class: 'two-col' },
        h('div', { class: 'card' }, cardTitle('Facts'),
          h('dl', { class: 'facts', id: 'taskmanager-facts' }, item('ID', 'id'), item('Data host', 'dataHost'),
            item('Slots used / total', 'slots'), item('Free slots', 'freeSlots'), item('Cores', 'cores'), item('Memory', 'memoryBytes'),
            item('CPU', 'cpuLoad'), item('Memory used', 'memoryLoad'), item('Last heartbeat', 'timeSinceLastHeartbeatMs'),
            item('Waiting jobs', 'waitingJobs'), item('Region', 'region'), item('Load', 'load'))),
        h('div', { class: 'card' }, cardTitle('Workers'), workers)),
      h('div', { class: 'two-col' },
        h('div', { class: 'card' }, h('div', { class: 'card-head' }, cardTitle('CPU'), (f.cpuNow = h('span', { class: 'muted' }))), cpu.el),
        h('div', { class: 'card' }, h('div', { class: 'card-head' }, cardTitle('Memory'), (f.memNow = h('span', { class: 'muted' }))), mem.el)));
    const monPath = `/taskmanagers/${enc(tmId)}/monitor`;
    return {
      el: h('section', { id: 'taskmanager', class: 'view' }, missing, content),
      crumbs: [{ text: 'TaskManagers', href: '#/taskmanagers' }, { text: tmId }],
      paths: ['/taskmanagers', monPath],
      update(res) {
        const tm = ((res['/taskmanagers'].data || {}).taskmanagers || []).find((x) => x.id === tmId);
        missing.hidden = !!tm;
        content.hidden = !tm;
        if (!tm) return;
        const used = isNum(tm.slotsNumber) && isNum(tm.freeSlots) ? tm.slotsNumber - tm.freeSlots : null;
        setField(f.id, tm.id, tm.id);
        setField(f.dataHost, tm.dataHost || '—', tm.dataHost || null);
        setField(f.slots, `${fmtInt(used)} / ${fmtInt(tm.slotsNumber)}`, used);
        setField(f.freeSlots, fmtInt(tm.freeSlots), tm.freeSlots);
        setField(f.cores, fmtCores(tm.cores), tm.cores);
        setField(f.memoryBytes, fmtBytes(tm.memoryBytes), tm.memoryBytes);
        setField(f.cpuLoad, fmtPct(tm.cpuLoad), tm.cpuLoad);
        setField(f.memoryLoad, fmtPct(tm.memoryLoad), tm.memoryLoad);
        setField(f.timeSinceLastHeartbeatMs, fmtDuration(tm.timeSinceLastHeartbeatMs), tm.timeSinceLastHeartbeatMs);
        setField(f.waitingJobs, fmtInt(tm.waitingJobs), tm.waitingJobs);
        if (!f.region.$b) { f.region.$b = h('span'); f.region.replaceChildren(f.region.$b); }
        setBadge(f.region.$b, tm.region || '—', regionCls(tm.region));
        setAttr(f.region, 'data-value', tm.region || '');
        setField(f.load, fmtLoad(tm.load), tm.load);
        syncChildren(workers, tm.workers || [], {
          key: (w) => w.job,
          create: () => { const li = h('li'); li.$a = h('a'); li.$n = h('span', { class: 'muted' }); li.append(li.$a, ' ', li.$n); return li; },
          update: (li, w) => {
            setAttr(li, 'data-job-id', w.job);
            setAttr(li.$a, 'href', jobHref(w.job));
            setText(li.$a, w.name || w.job);
            setText(li.$n, `${w.subtasks} subtask${w.subtasks === 1 ? '' : 's'} · ${w.job}`);
          },
          empty: () => h('li', { class: 'muted', text: 'No workers: this TaskManager runs no job.' }),
        });
        const mr = res[monPath];
        const samples = (mr.ok ? mr.data.samples || [] : []).slice(-MAX_CHART_SAMPLES);
        const series = (key, color) => [{
          key, color, area: true, dots: true,
          points: samples.map((x) => [x.at_ms, (x.sample || {})[key]]).filter((p) => isNum(p[0]) && isNum(p[1])),
        }];
        const pctAxis = { yMax: 1, yTicks: [0, 0.25, 0.5, 0.75, 1], fmtY: fmtPct };
        cpu.update(series('cpu', '#2563eb'), pctAxis);
        mem.update(series('memory', '#9333ea'), pctAxis);
        const lastSample = samples.length ? samples[samples.length - 1].sample || {} : {};
        setText(f.cpuNow, samples.length ? `now ${fmtPct(lastSample.cpu)} · ${samples.length} samples` : '');
        setText(f.memNow, samples.length ? `now ${fmtPct(lastSample.memory)} of ${fmtBytes(lastSample.total_memory)}` : '');
      },
    };
  }

  // Scheduling ─────────────────────────────────────────────
  function schedulingView() {
    const f = {};
    const item = (label, key) => [h('dt', { text: label }), (f[key] = h('dd', { 'data-field': key, text: '—' }))];
    const cols = [
      { key: 'id', label: 'TaskManager' }, { key: 'slots', label: 'Slots used', num: true },
      { key: 'waiting', label: 'Waiting jobs' }, { key: 'region', label: 'Region' }, { key: 'load', label: 'Load', num: true },
    ];
    const t = table('scheduling-table', cols);
    const queue = h('ul', { id: 'shared-queue', class: 'plain-list inline' });
    const migrations = h('ol', { id: 'migrations', class: 'plain-list migrations' });
    const chart = createChart('load', 'Load of each TaskManager over time');
    const legend = h('div', { id: 'load-legend', class: 'legend' });
    const el = h('section', { id: 'scheduling', class: 'view' },
      h('div', { class: 'two-col' },
        h('div', { class: 'card' }, cardTitle('Scheduler'),
          h('dl', { class: 'facts', id: 'scheduling-summary' }, item('Scheduler', 'scheduler'), item('Rebalance round', 'rebalance-round'),
            item('Decision time', 'scheduler-time-ms'), item('Cluster load', 'cluster-load'))),
        h('div', { class: 'card' }, cardTitle('Shared queue'), queue,
          h('p', { class: 'muted small', text: 'Jobs waiting for a slot that no TaskManager has taken yet.' }))),
      h('div', { class: 'card' }, cardTitle('TaskManagers'),
        h('p', { class: 'muted small regions-help' },
          'Regions (RFTS): ', badge('UP', regionCls('UP')), ' overloaded, gives waiting jobs away · ',
          badge('LP', regionCls('LP')), ' lightly over · ', badge('NS', regionCls('NS')), ' near saturation · ',
          badge('DS', regionCls('DS')), ' under-saturated, receives jobs.'),
        h('div', { class: 'table-scroll' }, t.el)),
      h('div', { class: 'two-col wide-left' },
        h('div', { class: 'card' }, cardTitle('Load over time'), chart.el, legend),
        h('div', { class: 'card' }, cardTitle('Migrations'), h('div', { class: 'scroll-list' }, migrations))));

    let legendSig = null;
    return {
      el,
      crumbs: [{ text: 'Scheduling' }],
      paths: ['/scheduling', '/jobs'],
      update(res) {
        const sc = res['/scheduling'].data || {};
        const names = new Map(((res['/jobs'].data || {}).jobs || []).map((j) => [j.id, j.name]));
        const jobLink = (id) => ({ href: jobHref(id), text: names.get(id) || id, title: id });
        setField(f.scheduler, sc.scheduler || '—', sc.scheduler || null);
        setField(f['rebalance-round'], fmtInt(sc['rebalance-round']), sc['rebalance-round']);
        setField(f['scheduler-time-ms'], fmtMillis(sc['scheduler-time-ms']), sc['scheduler-time-ms']);
        setField(f['cluster-load'], fmtLoad(sc['cluster-load']), sc['cluster-load']);

        const tms = (sc.taskmanagers || []).slice().sort((a, b) => String(a.id).localeCompare(String(b.id)));
        syncChildren(t.tbody, tms, {
          key: (tm) => tm.id,
          create: (tm) => row({ 'data-taskmanager': tm.id }, cols),
          update: (tr, tm) => {
            setAttr(tr, 'data-region', tm.region || '');
            cellLink(tr.$c.id, tmHref(tm.id), tm.id, tm.id);
            setField(tr.$c.slots, `${fmtInt(tm.used)} / ${fmtInt(tm.slots)}`, tm.used);
            const waiting = tm.waiting || [];
            if (!tr.$c.waiting.$n) {
              tr.$c.waiting.$n = h('span', { class: 'count' });
              tr.$c.waiting.$l = h('span', { class: 'links' });
              tr.$c.waiting.append(tr.$c.waiting.$n, ' ', tr.$c.waiting.$l);
            }
            setText(tr.$c.waiting.$n, String(waiting.length));
            setLinks(tr.$c.waiting.$l, waiting.map(jobLink), ', ', '');
            setAttr(tr.$c.waiting, 'data-value', waiting.length);
            cellBadge(tr.$c.region, tm.region || '—', regionCls(tm.region), tm.region || '');
            setField(tr.$c.load, fmtLoad(tm.load), tm.load);
          },
          empty: t.empty('No TaskManager registered.'),
        });

        syncChildren(queue, sc['shared-queue'] || [], {
          key: (id) => id,
          create: () => { const li = h('li'); li.$a = h('a'); li.append(li.$a); return li; },
          update: (li, id) => { setAttr(li, 'data-job-id', id); setAttr(li.$a, 'href', jobHref(id)); setText(li.$a, names.get(id) || id); },
          empty: () => h('li', { class: 'muted', text: 'empty' }),
        });

        syncChildren(migrations, (sc.migrations || []).slice(0, 100), {
          key: (m) => `${m.at}|${m.round}|${m.job}|${m.from}|${m.to}`,
          create: () => {
            const li = h('li', { class: 'migration' });
            li.$time = h('span', { class: 'time' });
            li.$round = h('span', { class: 'muted' });
            li.$job = h('a');
            li.$from = h('a');
            li.$to = h('a');
            li.append(li.$time, ' ', li.$round, ' ', li.$job, h('span', { class: 'move' }, li.$from, ' → ', li.$to));
            return li;
          },
          update: (li, m) => {
            setAttr(li, 'data-job-id', m.job);
            setText(li.$time, fmtDateTime(m.at));
            setText(li.$round, `round ${m.round}`);
            setAttr(li.$job, 'href', jobHref(m.job));
            setText(li.$job, names.get(m.job) || m.job);
            setAttr(li.$job, 'title', m.job);
            setAttr(li.$from, 'href', tmHref(m.from));
            setText(li.$from, m.from);
            setAttr(li.$to, 'href', tmHref(m.to));
            setText(li.$to, m.to);
          },
          empty: () => h('li', { class: 'muted empty', text: 'no migrations yet' }),
        });

        // One line per TaskManager over the history, plus the cluster load (dashed).
        const history = (sc.history || []).slice(-MAX_CHART_SAMPLES);
        const ids = [...new Set([...tms.map((x) => x.id), ...history.flatMap((e) => (e.taskmanagers || []).map((x) => x.id))])].sort();
        const series = ids.map((id, i) => ({
          key: id, label: id, color: PALETTE[i % PALETTE.length],
          points: history.map((e) => [e.at, ((e.taskmanagers || []).find((x) => x.id === id) || {}).load]).filter((p) => isNum(p[0]) && isNum(p[1])),
        }));
        series.push({ key: '\u0000cluster', label: 'cluster', color: '#334155', dashed: true,
          points: history.map((e) => [e.at, e['cluster-load']]).filter((p) => isNum(p[0]) && isNum(p[1])) });
        // Round steps keep the ticks readable; 1.0 (saturation) is always on the axis.
        const maxLoad = Math.max(1, ...series.flatMap((x) => x.points.map((p) => p[1])));
        const step = maxLoad <= 1.5 ? 0.25 : maxLoad <= 3 ? 0.5 : Math.ceil(maxLoad / 6);
        const yMax = Math.ceil(maxLoad / step) * step;
        const yTicks = Array.from({ length: Math.round(yMax / step) + 1 }, (_, i) => i * step);
        chart.update(series, {
          yMax, yTicks, fmtY: (v) => v.toFixed(2), count: history.length,
          emptyText: sc.scheduler === 'rfts' ? 'No load history yet.' : 'No load history: only the RFTS scheduler reports loads.',
        });
        const sig = JSON.stringify(series.map((x) => x.key));
        if (sig !== legendSig) {
          legendSig = sig;
          legend.replaceChildren(...series.map((x) => h('span', { class: 'legend-item' },
            h('span', { class: `swatch${x.dashed ? ' dashed' : ''}`, 'data-color': x.color }), x.label)));
          for (const sw of legend.querySelectorAll('.swatch')) sw.style.borderColor = sw.getAttribute('data-color');
        }
      },
    };
  }

  // ───────────────────────────── 6. Job graph (layout + SVG) ─────────────────────────────

  const G = { PAD: 24, GAP_X: 90, GAP_Y: 28, PAD_X: 12, PAD_TOP: 8, OP_LINE: 17, META_LINE: 15, META_LINES: 5, MIN_W: 240, MAX_W: 270 };
  const IDLE_RGB = [206, 232, 242];
  const MID_RGB = [250, 216, 150];
  const HOT_RGB = [236, 104, 72];

  /** Fill colour by busy ratio: idle blue-green, through amber, to orange-red. */
  function busyColor(r) {
    const x = clamp(isNum(r) ? r : 0, 0, 1);
    const [a, b, t] = x < 0.5 ? [IDLE_RGB, MID_RGB, x * 2] : [MID_RGB, HOT_RGB, (x - 0.5) * 2];
    return `rgb(${a.map((c, i) => Math.round(c + (b[i] - c) * t)).join(',')})`;
  }

  // Text width from a canvas, so node widths and ellipses match the rendered font.
  const measureCtx = (() => { try { return document.createElement('canvas').getContext('2d'); } catch (_) { return null; } })();
  function textWidth(text, font, size) {
    if (!measureCtx) return text.length * size * 0.6;
    measureCtx.font = font;
    return measureCtx.measureText(text).width;
  }
  function fitText(text, maxPx, font, size) {
    if (textWidth(text, font, size) <= maxPx) return text;
    let lo = 0;
    let hi = text.length;
    while (lo < hi) { // longest prefix that fits with the ellipsis
      const mid = Math.ceil((lo + hi) / 2);
      if (textWidth(`${text.slice(0, mid)}…`, font, size) <= maxPx) lo = mid; else hi = mid - 1;
    }
    return `${text.slice(0, lo)}…`;
  }

  /**
   * Layered layout, left to right: layer = longest path from a source (Kahn's order), then a
   * few barycentre sweeps (down using predecessors, up using successors) to reduce crossings.
   */
  function layoutDag(ids, edges) {
    const preds = new Map(ids.map((id) => [id, []]));
    const succs = new Map(ids.map((id) => [id, []]));
    for (const e of edges) {
      if (preds.has(e.target) && succs.has(e.source) && e.source !== e.target) {
        preds.get(e.target).push(e.source);
        succs.get(e.source).push(e.target);
      }
    }
    const indeg = new Map(ids.map((id) => [id, preds.get(id).length]));
    const layer = new Map(ids.map((id) => [id, 0]));
    const queue = ids.filter((id) => indeg.get(id) === 0);
    while (queue.length) {
      const u = queue.shift();
      for (const w of succs.get(u)) {
        layer.set(w, Math.max(layer.get(w), layer.get(u) + 1));
        indeg.set(w, indeg.get(w) - 1);
        if (indeg.get(w) === 0) queue.push(w);
      }
    }
    // (A cycle cannot happen in a job graph; its vertices would just keep the layer reached so far.)
    const layers = [];
    for (const id of ids) (layers[layer.get(id)] = layers[layer.get(id)] || []).push(id);
    const filled = layers.filter(Boolean);
    const pos = new Map();
    const place = (L) => L.forEach((id, i) => pos.set(id, i - (L.length - 1) / 2)); // centred, comparable across layers
    filled.forEach(place);
    const avg = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    for (let iter = 0; iter < 4; iter++) {
      const down = iter % 2 === 0;
      const order = down ? filled.slice(1) : filled.slice(0, -1).reverse();
      for (const L of order) {
        const bc = new Map(L.map((id) => {
          const nb = (down ? preds : succs).get(id);
          return [id, nb.length ? avg(nb.map((n) => pos.get(n))) : pos.get(id)];
        }));
        L.sort((a, b) => bc.get(a) - bc.get(b) || pos.get(a) - pos.get(b));
        place(L);
      }
    }
    return filled;
  }

  function createJobGraph(onSelect) {
    const root = s('svg', { id: 'job-graph', class: 'job-graph', role: 'group', 'aria-label': 'Job graph' });
    const scroller = h('div', { class: 'graph-scroll' }, root);
    const legend = h('div', { class: 'legend graph-legend' },
      h('span', { class: 'legend-item' }, (() => { const x = h('span', { class: 'swatch box' }); x.style.background = busyColor(0); return x; })(), 'idle'),
      h('span', { class: 'legend-item' }, (() => { const x = h('span', { class: 'swatch box wide' }); x.style.background = `linear-gradient(90deg, ${busyColor(0)}, ${busyColor(0.5)}, ${busyColor(1)})`; return x; })(), 'busy (fill blends with the busy ratio, 0 → 100%)'),
      h('span', { class: 'legend-item' }, h('span', { class: 'swatch box hatched' }), 'backpressured > 10% (purple hatched border)'),
      h('span', { class: 'legend-item muted' }, 'Edges are labelled with their partitioning.'));
    const nodes = new Map(); // vertex id -> parts to update in place
    let topoKey = null;
    const opFont = () => `600 12.5px ${getComputedStyle(document.body).fontFamily}`;
    const opsOf = (v) => (Array.isArray(v.operators) && v.operators.length ? v.operators : [v.name || `vertex ${v.id}`]).map(String);

    function rebuild(job) {
      root.replaceChildren();
      nodes.clear();
      const verts = job.vertices || [];
      if (!verts.length) {
        setAttr(root, 'viewBox', '0 0 400 60');
        setAttr(root, 'width', 400);
        setAttr(root, 'height', 60);
        root.append(s('text', { x: 16, y: 34, class: 'graph-empty', text: 'No vertices yet.' }));
        return;
      }
      const font = opFont();
      const widest = Math.max(...verts.flatMap((v) => opsOf(v).map((op) => textWidth(op, font, 12.5))));
      const W = clamp(Math.ceil(widest) + 2 * G.PAD_X, G.MIN_W, G.MAX_W);
      const ids = verts.map((v) => String(v.id));
      const byId = new Map(verts.map((v) => [String(v.id), v]));
      const edges = (job.edges || []).map((e) => ({ ...e, source: String(e.source), target: String(e.target) }))
        .filter((e) => byId.has(e.source) && byId.has(e.target));
      const heightOf = (v) => G.PAD_TOP + opsOf(v).length * G.OP_LINE + 9 + G.META_LINES * G.META_LINE + 6;
      const layers = layoutDag(ids, edges);
      const layerH = layers.map((L) => L.reduce((sum, id) => sum + heightOf(byId.get(id)), 0) + G.GAP_Y * (L.length - 1));
      const maxH = Math.max(...layerH);
      const box = new Map();
      layers.forEach((L, li) => {
        let y = G.PAD + (maxH - layerH[li]) / 2;
        const x = G.PAD + li * (W + G.GAP_X);
        for (const id of L) {
          const hgt = heightOf(byId.get(id));
          box.set(id, { x, y, w: W, h: hgt });
          y += hgt + G.GAP_Y;
        }
      });
      const width = 2 * G.PAD + layers.length * W + (layers.length - 1) * G.GAP_X;
      const height = 2 * G.PAD + maxH;
      setAttr(root, 'viewBox', `0 0 ${width} ${height}`);
      setAttr(root, 'width', width); // natural size; the wrapper scrolls when wider than the screen
      setAttr(root, 'height', height);

      root.append(s('defs', null,
        s('marker', { id: 'hg-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
          s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-head' })),
        s('pattern', { id: 'hg-hatch', patternUnits: 'userSpaceOnUse', width: 8, height: 8, patternTransform: 'rotate(45)' },
          s('rect', { width: 3, height: 8, class: 'hatch-line' }))));

      // Ports: spread several edges over a node's side, ordered by the other end's height.
      const centre = (id) => box.get(id).y + box.get(id).h / 2;
      const portY = (id, list, e) => {
        const i = list.indexOf(e);
        const step = Math.min(16, box.get(id).h / (list.length + 1));
        return centre(id) + (i - (list.length - 1) / 2) * step;
      };
      const outs = new Map(ids.map((id) => [id, []]));
      const ins = new Map(ids.map((id) => [id, []]));
      for (const e of edges) { outs.get(e.source).push(e); ins.get(e.target).push(e); }
      for (const list of outs.values()) list.sort((a, b) => centre(a.target) - centre(b.target));
      for (const list of ins.values()) list.sort((a, b) => centre(a.source) - centre(b.source));

      const gEdges = s('g', { class: 'edges' });
      for (const e of edges) {
        const a = box.get(e.source);
        const b = box.get(e.target);
        const x1 = a.x + a.w;
        const y1 = portY(e.source, outs.get(e.source), e);
        const x2 = b.x - 1;
        const y2 = portY(e.target, ins.get(e.target), e);
        const dx = Math.max(40, (x2 - x1) / 2);
        const part = String(e.partitioning || '');
        gEdges.append(s('g', { class: `edge part-${slug(part)}`, 'data-source': e.source, 'data-target': e.target, 'data-partitioning': part },
          s('path', { d: `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`, 'marker-end': 'url(#hg-arrow)' }),
          s('text', { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 6, 'text-anchor': 'middle', class: 'edge-label', text: part })));
      }
      root.append(gEdges);

      const gNodes = s('g', { class: 'vertices' });
      for (const id of ids) {
        const v = byId.get(id);
        const b = box.get(id);
        const ops = opsOf(v);
        const g = s('g', { class: 'vertex', 'data-vertex': id, transform: `translate(${b.x},${b.y})`, tabindex: 0, role: 'button', 'aria-label': `Vertex ${v.name || id}` });
        g.addEventListener('click', () => onSelect(id));
        g.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); onSelect(id); } });
        const n = { g };
        n.ring = s('rect', { class: 'ring', x: -5, y: -5, width: b.w + 10, height: b.h + 10, rx: 11 });
        n.body = s('rect', { class: 'body', width: b.w, height: b.h, rx: 8, fill: busyColor(0) });
        const hatch = s('rect', { class: 'hatch', width: b.w, height: b.h, rx: 8, fill: 'url(#hg-hatch)' });
        g.append(n.ring, n.body, hatch);
        ops.forEach((op, i) => {
          const t = s('text', { class: 'op', x: G.PAD_X, y: G.PAD_TOP + 13 + i * G.OP_LINE, text: fitText(op, b.w - 2 * G.PAD_X, font, 12.5) });
          t.append(s('title', { text: op })); // the full name when truncated
          g.append(t);
        });
        const sepY = G.PAD_TOP + ops.length * G.OP_LINE + 4;
        g.append(s('line', { class: 'sep', x1: G.PAD_X, x2: b.w - G.PAD_X, y1: sepY, y2: sepY }));
        const meta = (j) => s('text', { class: 'meta', x: G.PAD_X, y: sepY + 15 + j * G.META_LINE });
        const span = (field, cls) => s('tspan', { 'data-field': field, class: cls || null });
        const line = (j, ...parts) => { const t = meta(j); t.append(...parts); g.append(t); return t; };
        n.par = span('parallelism', 'strong'); n.status = span('status');
        n.read = span('read-records', 'strong'); n.rateIn = span('rate-in');
        n.write = span('write-records', 'strong'); n.rateOut = span('rate-out');
        n.busy = span('busy', 'strong'); n.bp = span('backpressure', 'strong');
        n.wm = span('watermark');
        line(0, 'parallelism ', n.par, ' · ', n.status);
        line(1, 'in ', n.read, ' · ', n.rateIn, '/s');
        line(2, 'out ', n.write, ' · ', n.rateOut, '/s');
        line(3, 'busy ', n.busy, ' · backpressure ', n.bp);
        n.wmLine = line(4, 'watermark ', n.wm);
        gNodes.append(g);
        nodes.set(id, n);
      }
      root.append(gNodes);
    }

    function update(job, metrics, selected) {
      const key = JSON.stringify([(job.vertices || []).map((v) => [String(v.id), opsOf(v)]),
        (job.edges || []).map((e) => [String(e.source), String(e.target), e.partitioning])]);
      if (key !== topoKey) { topoKey = key; rebuild(job); } // layout only when the topology changes
      for (const v of job.vertices || []) {
        const n = nodes.get(String(v.id));
        if (!n) continue;
        const m = metrics.get(String(v.id)) || {};
        const vm = v.metrics || {};
        setField(n.par, fmtInt(v.parallelism), v.parallelism);
        setField(n.status, v.status || '', v.status || null);
        setField(n.read, fmtInt(vm['read-records']), vm['read-records']);
        setField(n.write, fmtInt(vm['write-records']), vm['write-records']);
        setField(n.rateIn, fmtRate(m.rateIn), m.rateIn);
        setField(n.rateOut, fmtRate(m.rateOut), m.rateOut);
        setField(n.busy, fmtPct(m.busy), m.busy);
        setField(n.bp, fmtPct(m.bp), m.bp);
        setField(n.wm, fmtWatermark(v.watermark), v.watermark);
        setAttr(n.wmLine, 'visibility', v.watermark === null || v.watermark === undefined ? 'hidden' : null);
        setAttr(n.body, 'fill', busyColor(m.busy));
        const backpressured = isNum(m.bp) && m.bp > 0.1;
        n.g.classList.toggle('backpressured', backpressured);
        n.g.classList.toggle('selected', String(v.id) === selected);
        setAttr(n.g, 'data-busy', isNum(m.busy) ? m.busy : null);
        setAttr(n.g, 'data-backpressure', isNum(m.bp) ? m.bp : null);
        setAttr(n.g, 'aria-pressed', String(v.id) === selected ? 'true' : 'false');
      }
    }
    return { el: scroller, legend, update };
  }

  // ───────────────────────────── 7. Charts (SVG line charts) ─────────────────────────────

  /**
   * A line chart built once; update() moves its polylines and points. Series:
   * [{key, color, points: [[t, y]], dots?, area?, dashed?}]. data-points = samples drawn.
   */
  function createChart(series, label) {
    const W = 640;
    const H = 230;
    const M = { l: 46, r: 16, t: 12, b: 26 };
    const root = s('svg', { class: 'chart', 'data-series': series, 'data-points': 0, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': label });
    const gGrid = s('g', { class: 'grid' });
    const gSeries = s('g', { class: 'series' });
    const empty = s('text', { class: 'chart-empty', x: (M.l + W - M.r) / 2, y: H / 2, 'text-anchor': 'middle', text: 'No samples yet.' });
    root.append(gGrid, gSeries, empty);
    const lines = new Map(); // key -> {g, area, poly, dots: []}

    function update(list, { yMax = 1, yTicks = [0, 0.5, 1], fmtY = String, count, emptyText = 'No samples yet.' } = {}) {
      const ts = list.flatMap((x) => x.points.map((p) => p[0]));
      const drawn = count !== undefined ? count : Math.max(0, ...list.map((x) => x.points.length));
      setAttr(root, 'data-points', drawn);
      setAttr(empty, 'visibility', ts.length ? 'hidden' : null);
      setText(empty, emptyText);
      let t0 = ts.length ? Math.min(...ts) : Date.now() - 60000;
      const t1 = ts.length ? Math.max(...ts) : Date.now();
      if (t1 - t0 < 1000) t0 = t1 - 1000;
      const x = (t) => M.l + ((t - t0) / (t1 - t0)) * (W - M.l - M.r);
      const y = (v) => H - M.b - (clamp(v, 0, yMax) / yMax) * (H - M.t - M.b);

      // Grid and axes are a handful of elements: redrawing them each poll is cheapest.
      const grid = [];
      for (const v of yTicks) {
        grid.push(s('line', { x1: M.l, x2: W - M.r, y1: y(v), y2: y(v), class: v === 0 ? 'axis' : null }));
        grid.push(s('text', { x: M.l - 6, y: y(v) + 4, 'text-anchor': 'end', text: fmtY(v) }));
      }
      const nx = ts.length ? 5 : 0; // no time axis labels without data
      for (let i = 0; i < nx; i++) {
        const t = t0 + ((t1 - t0) * i) / (nx - 1);
        grid.push(s('line', { x1: x(t), x2: x(t), y1: H - M.b, y2: H - M.b + 4, class: 'axis' }));
        grid.push(s('text', { x: x(t), y: H - 8, 'text-anchor': i === 0 ? 'start' : i === nx - 1 ? 'end' : 'middle', text: fmtClock(t) }));
      }
      gGrid.replaceChildren(...grid);

      const keep = new Set();
      for (const ser of list) {
        keep.add(ser.key);
        let ln = lines.get(ser.key);
        if (!ln) {
          ln = { g: s('g', { class: 'line', 'data-key': ser.key }), dots: [] };
          if (ser.area) { ln.area = s('path', { class: 'area' }); ln.g.append(ln.area); }
          ln.poly = s('polyline', { class: ser.dashed ? 'dashed' : null });
          ln.dotGroup = s('g', { class: 'dots' });
          ln.g.append(ln.poly, ln.dotGroup);
          gSeries.append(ln.g);
          lines.set(ser.key, ln);
        }
        const pts = ser.points.map(([t, v]) => [x(t), y(v)]);
        setAttr(ln.poly, 'points', pts.map((p) => `${p[0].toFixed(1)},${p[1].toFixed(1)}`).join(' '));
        setAttr(ln.poly, 'stroke', ser.color);
        if (ln.area) {
          setAttr(ln.area, 'd', pts.length > 1 ? `M${pts[0][0]},${H - M.b} ${pts.map((p) => `L${p[0]},${p[1]}`).join(' ')} L${pts[pts.length - 1][0]},${H - M.b} Z` : '');
          setAttr(ln.area, 'fill', ser.color);
        }
        const want = ser.dots ? pts.length : 0;
        while (ln.dots.length < want) { // pooled circles: created once, then only moved
          const c = s('circle', { class: 'point', r: 2.5 });
          c.append(s('title'));
          ln.dotGroup.append(c);
          ln.dots.push(c);
        }
        while (ln.dots.length > want) ln.dots.pop().remove();
        for (let i = 0; i < want; i++) {
          const c = ln.dots[i];
          setAttr(c, 'cx', pts[i][0].toFixed(1));
          setAttr(c, 'cy', pts[i][1].toFixed(1));
          setAttr(c, 'fill', ser.color);
          setText(c.firstChild, `${fmtClock(ser.points[i][0])}: ${fmtY(ser.points[i][1])}`);
        }
      }
      for (const [k, ln] of lines) if (!keep.has(k)) { ln.g.remove(); lines.delete(k); }
    }
    return { el: root, update };
  }

  // ───────────────────────────── start ─────────────────────────────

  window.addEventListener('hashchange', route);
  // The network going away (laptop asleep) only delays a poll; coming back polls at once.
  window.addEventListener('online', () => tick());
  renderStatus();
  route();
})();
