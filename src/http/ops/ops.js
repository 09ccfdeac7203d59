// askbridge's ops page: pending questions, live, answerable here.
//
// Everything comes from the HTTP API. The event stream (GET api/events) replays the pending
// questions as `question.asked` when it connects and then sends every change; the page keeps a
// map of what it knows and reconnects by itself. It is read with fetch() and a stream reader, not
// EventSource, because EventSource cannot send the Authorization header and the token must never
// go in a URL (URLs end up in logs and in the browser's history).
//
// All question text is written with textContent / text nodes, never parsed as HTML: prompts,
// details and labels are written by whoever asks.
'use strict';

(() => {
  // A value kept as given (an action's tool and arguments) as people are shown it: the same
  // classes as core's text::visible (askbridge_core::text, the one text policy) made visible as
  // \u{..} escapes, so the page cannot be made to read `rm -rf ~` where `~ fr- mr` will run.
  // `keep` lists characters left as they are (the line breaks of pretty-printed JSON).
  const SHOWN_ESCAPED =
    /[\p{Cc}\p{Bidi_Control}\p{Default_Ignorable_Code_Point}\p{White_Space}\u2800\u115F\u1160\u3164\uFFA0\u{1D159}]/gu;
  function visible(text, keep = '') {
    return String(text).replace(SHOWN_ESCAPED, (c) =>
      c === ' ' || keep.includes(c) ? c : `\\u{${c.codePointAt(0).toString(16)}}`,
    );
  }

  const TOKEN_KEY = 'askbridge.apiToken';
  const RESOLVED_SHOWN = 50;
  const RECENT_MS = 60 * 60 * 1000;
  // The server sends a keep-alive comment every 15 s; three missed ones mean the connection is
  // dead even if no error surfaced (a laptop resumed from sleep, a proxy dropped it silently).
  const SILENCE_LIMIT_MS = 45 * 1000;
  const BACKOFF_FIRST_MS = 500;
  const BACKOFF_MAX_MS = 5000;
  const STATS_EVERY_MS = 30 * 1000;
  const STATS_AT_MOST_MS = 3000;
  const STATUSES = ['answered', 'declined', 'expired', 'cancelled'];

  const $ = (id) => document.getElementById(id);

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY),
    pending: new Map(), // id -> question
    resolved: new Map(), // id -> question, shown in "recently resolved"
    finished: new Set(), // every id seen resolved: a resolution is final, never go back to pending
    stale: new Set(), // pending ids not confirmed since the connection was lost
    filters: { session: '', surface: '' },
    skewMs: 0, // server clock minus browser clock
    epoch: 0, // changes when the token is forgotten or refused; see api()
  };

  // `epoch` counts connections made and lost: a reply fetched for an earlier connection must not
  // be applied after the page lost it (it would mark cards confirmed that no longer are).
  const conn = { generation: 0, epoch: 0, controller: null, timer: null, attempt: 0, liveSince: 0 };

  // ---- small helpers -------------------------------------------------------------------------

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(props || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'text') node.textContent = value;
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function now() {
    return Date.now() + state.skewMs;
  }

  function pad(n) {
    return String(n).padStart(2, '0');
  }

  function clock(iso) {
    const d = new Date(iso);
    return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }

  function seconds(s) {
    if (s === null || s === undefined) return '–';
    if (s < 1) return 'under 1 s'; // people answer; milliseconds would be noise
    if (s < 10) return `${s.toFixed(1)} s`;
    if (s < 60) return `${Math.round(s)} s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m} min ${Math.round(s % 60)} s`;
    return `${Math.floor(m / 60)} h ${m % 60} min`;
  }

  function timeLeft(ms) {
    if (ms <= 0) return 'Deadline passed; expiring…';
    const s = Math.ceil(ms / 1000);
    if (s < 3600) return `Expires in ${Math.floor(s / 60)}:${pad(s % 60)}`;
    const h = Math.floor(s / 3600);
    if (h < 48) return `Expires in ${h} h ${pad(Math.floor((s % 3600) / 60))} min`;
    return `Expires in ${Math.floor(h / 24)} d ${h % 24} h`;
  }

  // The server's Date header tells how far this browser's clock is off; countdowns use the
  // server's time, since that is what decides expiry.
  function noteClock(response, sentAt) {
    const date = Date.parse(response.headers.get('Date') || '');
    if (Number.isNaN(date)) return;
    const skew = date + 500 - (sentAt + Date.now()) / 2; // Date has whole seconds
    state.skewMs = Math.abs(skew) > 2000 ? skew : 0;
  }

  // The line every surface shows for a resolved question, as the server rendered it
  // (render::outcome_line): the page never re-derives askbridge's words.
  function outcomeLine(q) {
    return q.outcome || 'Pending';
  }

  function kindLabel(q) {
    if (q.kind === 'confirm') return 'Yes / No';
    if (q.kind === 'approval') return 'Approval';
    if (q.options.length === 0) return 'Free text';
    if (q.multi) return 'Choose several';
    return q.allow_custom ? 'Choose or write' : 'Choose one';
  }

  function surfacesOf(q) {
    if (q.targets.length === 0) return ['api'];
    return [...new Set(q.targets.map((t) => t.split(':')[0]))];
  }

  // ---- the API ------------------------------------------------------------------------------

  class NeedToken extends Error {}
  // The token was forgotten or refused while a request was out: its answer belongs to a view
  // that no longer exists and must not land in the new one.
  class Outdated extends Error {}

  function authHeaders(extra) {
    const headers = new Headers(extra || {});
    if (state.token) headers.set('Authorization', `Bearer ${state.token}`);
    return headers;
  }

  async function errorText(response) {
    try {
      const body = await response.json();
      if (body && typeof body.error === 'string') return body.error;
    } catch (_) {
      // not JSON: fall through to the status
    }
    return `askbridge answered ${response.status} ${response.statusText}`.trim();
  }

  // A request and its JSON body (null when there is none). Throws NeedToken on 401 and
  // Outdated when the token changed meanwhile, so callers only ever apply current answers.
  async function api(path, options) {
    const { method = 'GET', json } = options || {};
    const epoch = state.epoch;
    const init = { method, headers: authHeaders({ Accept: 'application/json' }), cache: 'no-store' };
    if (json !== undefined) {
      init.headers.set('Content-Type', 'application/json');
      init.body = JSON.stringify(json);
    }
    const sentAt = Date.now();
    const response = await fetch(path, init);
    if (epoch !== state.epoch) throw new Outdated();
    noteClock(response, sentAt);
    let body = null;
    try {
      body = await response.json();
    } catch (_) {
      // not JSON: the status says enough
    }
    if (epoch !== state.epoch) throw new Outdated();
    if (response.status === 401) {
      needToken(errorOf(response, body));
      throw new NeedToken();
    }
    return { response, body };
  }

  function errorOf(response, body) {
    if (body && typeof body.error === 'string') return body.error;
    return `askbridge answered ${response.status} ${response.statusText}`.trim();
  }

  // ---- the token ----------------------------------------------------------------------------

  function needToken(serverSays) {
    if (!$('login').hidden) return; // several requests refused at once: say it once
    const hadToken = Boolean(state.token);
    disconnect();
    forgetEverything();
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    $('login-message').textContent = hadToken
      ? `askbridge refused that token (${serverSays}). Enter the right one.`
      : 'This askbridge needs its API token (ASKBRIDGE_API_TOKEN) to show and answer questions.';
    $('board').hidden = true;
    $('forget-token').hidden = true;
    $('summary').hidden = true;
    $('login').hidden = false;
    setConnection('locked', 'Waiting for the API token');
    $('token-input').focus();
  }

  function onLogin(event) {
    event.preventDefault();
    const input = $('token-input');
    const token = input.value.trim();
    if (!token) {
      $('login-message').textContent = 'Enter the API token first.';
      input.focus();
      return;
    }
    input.value = '';
    state.token = token;
    sessionStorage.setItem(TOKEN_KEY, token);
    $('login').hidden = true;
    $('summary').hidden = false;
    $('forget-token').hidden = false;
    connect();
  }

  function onForget() {
    sessionStorage.removeItem(TOKEN_KEY);
    state.token = null;
    disconnect();
    forgetEverything();
    $('login-message').textContent = 'Token forgotten. Enter it again to connect.';
    $('board').hidden = true;
    $('summary').hidden = true;
    $('forget-token').hidden = true;
    $('login').hidden = false;
    setConnection('locked', 'Waiting for the API token');
    $('token-input').focus();
  }

  function forgetEverything() {
    state.epoch += 1;
    state.pending.clear();
    state.resolved.clear();
    state.finished.clear();
    state.stale.clear();
    $('pending').replaceChildren();
    $('resolved').replaceChildren();
    refreshLists();
  }

  // ---- the event stream ---------------------------------------------------------------------

  function setConnection(kind, text) {
    const node = $('connection');
    node.dataset.state = kind;
    if (node.textContent !== text) node.textContent = text;
  }

  function connect() {
    disconnect();
    run(conn.generation);
  }

  function disconnect() {
    conn.generation += 1;
    clearTimeout(conn.timer);
    if (conn.controller) conn.controller.abort();
    conn.controller = null;
  }

  // One connection attempt. `generation` changes when the page connects anew or stops, so an
  // old attempt that wakes up late does nothing.
  async function run(generation) {
    const controller = new AbortController();
    conn.controller = controller;
    setConnection('connecting', conn.attempt ? 'Reconnecting…' : 'Connecting…');
    let response;
    try {
      const sentAt = Date.now();
      response = await fetch('api/events', {
        headers: authHeaders({ Accept: 'text/event-stream' }),
        cache: 'no-store',
        signal: controller.signal,
      });
      noteClock(response, sentAt);
    } catch (_) {
      if (generation === conn.generation) retryLater(generation, 'askbridge is unreachable');
      return;
    }
    if (generation !== conn.generation) return;
    if (response.status === 401) {
      needToken(await errorText(response));
      return;
    }
    if (!response.ok || !response.body) {
      retryLater(generation, await errorText(response));
      return;
    }
    conn.attempt = 0;
    conn.epoch += 1;
    conn.liveSince = Date.now();
    setConnection('live', 'Live');
    $('board').hidden = false;
    $('summary').hidden = false;
    $('forget-token').hidden = !state.token;
    afterConnect();
    try {
      await readStream(response.body, controller);
    } catch (_) {
      // the connection broke; handled below like a clean end
    }
    if (generation === conn.generation) retryLater(generation, 'the connection was lost');
  }

  function retryLater(generation, why) {
    conn.epoch += 1;
    for (const id of state.pending.keys()) markStale(id, true);
    conn.attempt += 1;
    const delay =
      Math.min(BACKOFF_FIRST_MS * 2 ** (conn.attempt - 1), BACKOFF_MAX_MS) +
      Math.floor(Math.random() * 250);
    setConnection('down', `Reconnecting: ${why}. Next try in ${Math.ceil(delay / 1000)} s.`);
    clearTimeout(conn.timer);
    conn.timer = setTimeout(() => {
      if (generation === conn.generation) run(generation);
    }, delay);
  }

  async function readStream(body, controller) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let name = '';
    let data = [];
    let watchdog = setTimeout(() => controller.abort(), SILENCE_LIMIT_MS);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        clearTimeout(watchdog);
        watchdog = setTimeout(() => controller.abort(), SILENCE_LIMIT_MS);
        buffer += decoder.decode(value, { stream: true });
        const lines = buffer.split('\n');
        buffer = lines.pop();
        for (let line of lines) {
          if (line.endsWith('\r')) line = line.slice(0, -1);
          if (line === '') {
            if (data.length) dispatch(name || 'message', data.join('\n'));
            name = '';
            data = [];
          } else if (!line.startsWith(':')) {
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            let value = colon < 0 ? '' : line.slice(colon + 1);
            if (value.startsWith(' ')) value = value.slice(1);
            if (field === 'event') name = value;
            else if (field === 'data') data.push(value);
          }
        }
      }
    } finally {
      clearTimeout(watchdog);
      reader.cancel().catch(() => {});
    }
  }

  function dispatch(name, data) {
    if (name === 'resync') {
      // The server dropped events for this slow client: rebuild from the lists.
      quietly(reconcile());
      return;
    }
    if (!name.startsWith('question.')) {
      // Runs and rules: the second floor's views (floor.js) listen for these.
      for (const listener of hooks.events) listener(name, data);
      return;
    }
    let question;
    try {
      question = JSON.parse(data);
    } catch (_) {
      return;
    }
    apply(question);
  }

  // Background refreshes: a failure leaves the view as it was until the next one.
  function quietly(promise) {
    promise.catch(() => {});
  }

  function afterConnect() {
    for (const listener of hooks.connected) listener();
    quietly(reconcile());
    quietly(loadRecent());
    quietly(refreshStats());
  }

  // Questions this page had before the connection was lost and that are no longer pending were
  // resolved meanwhile: fetch each to show how. The list is read after the stream subscribed, so
  // anything pending is either in it or arrives as an event.
  async function reconcile() {
    const epoch = conn.epoch;
    const { response, body } = await api('api/questions?limit=1000');
    if (!response.ok || !body || epoch !== conn.epoch) return;
    const listed = new Set();
    for (const q of body.questions) {
      listed.add(q.id);
      apply(q);
    }
    for (const id of [...state.stale]) {
      if (listed.has(id) || !state.pending.has(id)) continue;
      const one = await api(`api/questions/${encodeURIComponent(id)}`);
      if (epoch !== conn.epoch) return;
      if (one.response.ok) apply(one.body);
      else if (one.response.status === 404) dropPending(id);
    }
  }

  async function loadRecent() {
    const since = now() - RECENT_MS;
    const lists = await Promise.all(
      STATUSES.map(async (status) => {
        const { response, body } = await api(`api/questions?status=${status}&limit=20`);
        return response.ok && body ? body.questions : [];
      }),
    );
    for (const q of lists.flat()) {
      if (q.resolution && Date.parse(q.resolution.at) >= since) apply(q);
    }
  }

  // ---- what the page knows ------------------------------------------------------------------

  function apply(q) {
    if (!q || typeof q.id !== 'string') return;
    if (q.status === 'pending') {
      if (state.finished.has(q.id)) return; // an older view of a question already resolved
      const isNew = !state.pending.has(q.id);
      state.pending.set(q.id, q);
      markStale(q.id, false);
      if (!isNew) updateProgress(q);
      if (isNew) {
        insertPending(q);
        // The replay right after connecting is not news; later arrivals are.
        if (Date.now() - conn.liveSince > 1500) announce(`New question: ${q.prompt}`);
        countInSummary(q, false);
      }
    } else {
      const wasPending = state.pending.has(q.id);
      const known = state.finished.has(q.id);
      state.finished.add(q.id);
      state.pending.delete(q.id);
      state.stale.delete(q.id);
      if (!known) {
        state.resolved.set(q.id, q);
        showResolved(q, wasPending);
        if (wasPending) announce(`${outcomeLine(q)}: ${q.prompt}`);
        countInSummary(q, wasPending);
      }
    }
    scheduleRefresh();
    scheduleStats();
  }

  // The replay brings many questions in one chunk: count and filter once per chunk, not per
  // question.
  let refreshQueued = false;
  function scheduleRefresh() {
    if (refreshQueued) return;
    refreshQueued = true;
    queueMicrotask(() => {
      refreshQueued = false;
      refreshLists();
    });
  }

  function dropPending(id) {
    state.pending.delete(id);
    state.stale.delete(id);
    const card = findCard(id);
    if (card) removeKeepingFocus(card);
    refreshLists();
  }

  function markStale(id, stale) {
    if (stale) state.stale.add(id);
    else state.stale.delete(id);
    const card = findCard(id);
    if (!card || card.dataset.status !== 'pending') return;
    card.classList.toggle('stale', stale);
    if (stale) card.dataset.stale = 'true';
    else delete card.dataset.stale;
    card.querySelector('.stale-note').hidden = !stale;
  }

  function findCard(id) {
    return document.getElementById(`q-${id}`);
  }

  function announce(text) {
    const log = $('announcer');
    log.append(el('p', { text }));
    while (log.childElementCount > 5) log.firstElementChild.remove();
  }

  // ---- cards --------------------------------------------------------------------------------

  function insertPending(q) {
    const card = pendingCard(q);
    const list = $('pending');
    const later = [...list.children].find((other) => {
      const o = state.pending.get(other.dataset.id);
      return o && (o.expires_at > q.expires_at || (o.expires_at === q.expires_at && o.id > q.id));
    });
    list.insertBefore(card, later || null);
    updateCountdown(card.querySelector('.countdown'), now());
  }

  function pendingCard(q) {
    const id = q.id;
    const promptId = `p-${id}`;
    const card = el('article', {
      class: 'card',
      id: `q-${id}`,
      'data-id': id,
      'data-kind': q.kind,
      'data-status': 'pending',
      'aria-labelledby': promptId,
    });
    const head = el(
      'div',
      { class: 'card-head' },
      el('span', { class: `badge kind-${q.kind}`, text: kindLabel(q) }),
      el('time', { class: 'countdown', datetime: q.expires_at, 'data-expires': q.expires_at }),
    );
    card.append(head, el('h3', { class: 'prompt', id: promptId, text: q.prompt }));
    if (q.detail) {
      card.append(
        // Focusable so that a long detail can be scrolled with the keyboard.
        el('p', { class: 'detail', tabindex: 0, text: q.detail }),
      );
    }
    if (q.action) {
      card.append(
        el(
          'div',
          { class: 'action', role: 'group', 'aria-label': 'What is being approved' },
          el('p', { class: 'action-tool', text: `Action: ${visible(q.action.tool)}` }),
          // The whole arguments, as JSON: exactly what the approval approves, with every
          // invisible or direction character shown as an escape (JSON escapes the controls).
          el('pre', { class: 'action-args', tabindex: 0, text: visible(JSON.stringify(q.action.args, null, 2), '\n') }),
          el('p', { class: 'action-digest', text: `digest ${String(q.action.digest || '').slice(0, 8)}` }),
        ),
      );
    }
    const who = q.answerers.length
      ? q.answerers.join(', ') +
        (q.answerers.includes('api') ? '' : ' (this page answers as api, not among them)')
      : 'anyone who can see it';
    card.append(
      el(
        'dl',
        { class: 'meta' },
        row('Session', q.session_id),
        row('Targets', q.targets.length ? q.targets.join(', ') : 'none (the API and this page)'),
        row('Who may answer', who),
        row('Asked', clock(q.created_at)),
        ...nudgeRows(q),
        row('ID', el('code', { text: id })),
      ),
    );
    if (q.quorum) card.append(el('p', { class: 'progress', text: progressText(q) }));
    card.append(controls(q));
    card.append(
      el('p', {
        class: 'stale-note',
        hidden: true,
        text: 'Not live: askbridge cannot be reached, so this may have been answered elsewhere.',
      }),
    );
    card.append(el('p', { class: 'notice', role: 'status' }));
    card.hidden = !matches(q);
    return card;
  }

  // A quorum's progress, as every surface words it: "1 of 2 approved: @alice".
  function progressText(q) {
    const votes = q.votes || [];
    const counts = new Map();
    for (const v of votes) counts.set(v.tally, (counts.get(v.tally) || 0) + 1);
    let lead = null;
    for (const v of votes) if (!lead || counts.get(v.tally) > counts.get(lead.tally)) lead = v;
    const agreeing = lead ? votes.filter((v) => v.tally === lead.tally) : [];
    const verb = q.kind === 'approval' ? 'approved' : q.kind === 'confirm' ? 'said yes' : 'agree';
    const names = agreeing.map((v) => v.by_name || v.by).join(', ');
    const { needs, of } = q.quorum;
    return `${agreeing.length} of ${needs} ${verb}${names ? `: ${names}` : ''} (needs ${needs} of ${of.join(', ')})`;
  }

  function updateProgress(q) {
    const card = findCard(q.id);
    const node = card?.querySelector('.progress');
    if (node && q.quorum) node.textContent = progressText(q);
    // A batch with an action newly decided: its list redrawn, each decision in place of its
    // controls. The same state again (the reply's answer, then its event) leaves what is typed.
    const box = card?.querySelector('.controls');
    if (box && q.actions && q.actions.length) {
      const fresh = controls(q);
      if (box.dataset.decided !== fresh.dataset.decided) box.replaceWith(fresh);
    }
  }

  // How far a batch is: "2 of 5 actions decided".
  function batchProgress(q) {
    const decided = q.actions.filter((item) => item.decision).length;
    return `${decided} of ${q.actions.length} actions decided.`;
  }

  // Reminders and escalation steps: when each comes, and what a step adds.
  function nudgeRows(q) {
    const rows = [];
    if (q.reminders) {
      const { after_s: every, times } = q.reminders;
      rows.push(row('Reminders', `${times} at most, every ${seconds(every)} unanswered`));
    }
    (q.escalate || []).forEach((step, i) => {
      const at = new Date(Date.parse(q.created_at) + step.after_s * 1000);
      const adds = (step.targets || []).map((t) => `shown on ${t}`);
      if ((step.answerers || []).length) adds.push(`${step.answerers.join(', ')} may answer`);
      const when = at.getTime() <= Date.now() ? 'since' : 'at';
      rows.push(row(`Escalation ${i + 1}`, `${when} ${clock(at.toISOString())}: ${adds.join('; ')}`));
    });
    return rows;
  }

  function row(term, value) {
    return el('div', { class: 'meta-row' }, el('dt', { text: term }), el('dd', {}, value));
  }

  function controls(q) {
    const box = el('div', { class: 'controls' });
    const id = q.id;
    if (q.kind === 'confirm') {
      box.append(
        el(
          'div',
          { class: 'buttons', role: 'group', 'aria-label': 'Answer' },
          button('Yes', 'primary', () => send(q, 'reply', { answer: true })),
          button('No', 'secondary', () => send(q, 'reply', { answer: false })),
        ),
      );
      box.append(declineForm(q, 'Decline'));
      return box;
    }
    if (q.kind === 'form') {
      // One real form, from forms.js; the whole object goes in one reply.
      const form = hooks.form && q.form
        ? hooks.form(q, (answer) => send(q, 'reply', { answer }))
        : el('p', { text: 'This page cannot show this form; answer it over the API.' });
      box.append(form, declineForm(q, 'Decline'));
      return box;
    }
    if (q.kind === 'approval' && q.actions && q.actions.length) {
      // Several actions, each decided on its own (batch.js); which are decided, to redraw
      // only when that changes.
      box.dataset.decided = q.actions.filter((item) => item.decision).map((item) => item.n).join(',');
      box.append(hooks.batch
        ? hooks.batch(q, send)
        : el('p', { text: 'This page cannot show these actions; decide them over the API.' }));
      return box;
    }
    if (q.kind === 'approval') {
      // Exactly the decisions this approval offers (absent: once, always, reject).
      const allowed = q.allowed && q.allowed.length ? q.allowed : ['once', 'always', 'reject'];
      // The digest binds the decision to the action shown on this card.
      const digest = q.action && q.action.digest;
      const decide = [];
      if (allowed.includes('once')) decide.push(button('Allow once', 'primary', () => send(q, 'reply', { answer: 'once', digest })));
      if (allowed.includes('always')) decide.push(button('Always allow', 'primary', () => send(q, 'reply', { answer: 'always', digest })));
      if (decide.length) box.append(el('div', { class: 'buttons', role: 'group', 'aria-label': 'Decide' }, ...decide));
      if (allowed.includes('edit')) box.append(editForm(q, digest));
      if (allowed.includes('respond')) box.append(respondForm(q));
      if (allowed.includes('reject')) box.append(declineForm(q, 'Reject'));
      return box;
    }
    if (q.multi) {
      const customId = `custom-${id}`;
      const form = el('form', { class: 'multi', 'aria-label': 'Choose one or more' });
      const fieldset = el('fieldset', {}, el('legend', { text: 'Choose one or more' }));
      q.options.forEach((label, index) => {
        const boxId = `opt-${id}-${index}`;
        fieldset.append(
          el(
            'div',
            { class: 'check' },
            el('input', { type: 'checkbox', id: boxId, value: label }),
            el('label', { for: boxId, text: label }),
          ),
        );
      });
      form.append(fieldset);
      if (q.allow_custom) form.append(textField(customId, 'Or in your own words'));
      const submit = el('button', { type: 'submit', class: 'primary', text: 'Submit' });
      form.append(el('div', { class: 'buttons' }, submit));
      const count = () => {
        const n = form.querySelectorAll('input[type=checkbox]:checked').length;
        submit.textContent = n ? `Submit (${n})` : 'Submit';
      };
      form.addEventListener('change', count);
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        const chosen = [...form.querySelectorAll('input[type=checkbox]:checked')].map((c) => c.value);
        const custom = q.allow_custom ? $(customId).value.trim() : '';
        if (custom) chosen.push(custom);
        // An empty choice is sent too: askbridge says what would fit, in its own words.
        send(q, 'reply', { answer: chosen });
      });
      box.append(form);
      box.append(declineForm(q, 'Decline'));
      return box;
    }
    if (q.options.length) {
      box.append(
        el(
          'div',
          { class: 'buttons options', role: 'group', 'aria-label': 'Options' },
          q.options.map((label) => button(label, 'option', () => send(q, 'reply', { answer: label }))),
        ),
      );
    }
    if (q.allow_custom) {
      const fieldId = `text-${id}`;
      const form = el(
        'form',
        { class: 'free' },
        textField(fieldId, q.options.length ? 'Or in your own words' : 'Your answer'),
        el('div', { class: 'buttons' }, el('button', { type: 'submit', class: 'primary', text: 'Send' })),
      );
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        send(q, 'reply', { answer: $(fieldId).value });
      });
      box.append(form);
    }
    box.append(declineForm(q, 'Decline'));
    return box;
  }

  function textField(id, label) {
    return el(
      'div',
      { class: 'field' },
      el('label', { for: id, text: label }),
      el('input', { type: 'text', id, maxlength: 4000, autocomplete: 'off' }),
    );
  }

  function declineForm(q, verb) {
    const fieldId = `reason-${q.id}`;
    const form = el(
      'form',
      { class: 'decline' },
      el('label', { for: fieldId, text: `Reason (optional)` }),
      el(
        'div',
        { class: 'row' },
        el('input', { type: 'text', id: fieldId, maxlength: 4000, autocomplete: 'off' }),
        el('button', { type: 'submit', class: 'danger', text: verb }),
      ),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const message = $(fieldId).value.trim();
      send(q, 'reject', message ? { message } : {});
    });
    return form;
  }

  // Edit before approving: the arguments as real inputs (forms.js) prefilled with the proposed
  // values when the schema is the flat one, else the whole arguments as JSON. askbridge's own
  // check decides what fits; its words come back on the card.
  function editForm(q, digest) {
    const submit = (args) => send(q, 'reply', { decision: 'edit', args, digest });
    const args = q.action ? q.action.args : null;
    const schema = q.args_schema;
    const object = args && typeof args === 'object' && !Array.isArray(args);
    const simple = (f) => ['string', 'number', 'integer', 'boolean', 'array'].includes(f.type) && !f.anyOf && !f.oneOf && !f.properties;
    const flat = hooks.form && object && schema && schema.type === 'object' && schema.properties
      && Object.values(schema.properties).every(simple);
    if (flat) {
      const properties = {};
      for (const [name, field] of Object.entries(schema.properties)) {
        properties[name] = name in args ? { ...field, default: args[name] } : field;
      }
      const required = (schema.required || []).filter((name) => !(name in args));
      const fields = { id: `${q.id}-edit`, prompt: 'Edit the arguments', form: { type: 'object', properties, required } };
      return el('div', { class: 'edit' }, el('p', { class: 'help', text: 'Or edit the arguments:' }), hooks.form(fields, submit, 'Approve with changes'));
    }
    return jsonEditForm(`edit-${q.id}`, args, submit);
  }

  // The whole arguments as JSON in a text area (an action of a batch uses it too).
  function jsonEditForm(fieldId, args, submit) {
    const area = el('textarea', { id: fieldId, rows: 4, spellcheck: 'false' });
    area.value = JSON.stringify(args, null, 2);
    const form = el(
      'form',
      { class: 'edit' },
      el('label', { for: fieldId, text: 'Arguments to run with (JSON)' }),
      area,
      el('div', { class: 'buttons' }, el('button', { type: 'submit', class: 'primary', text: 'Approve with changes' })),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      let value;
      try {
        value = JSON.parse(area.value);
      } catch (_) {
        value = area.value; // sent as it is: askbridge says why it does not fit
      }
      submit(value);
    });
    return form;
  }

  // Respond: the person's words become the tool's result; nothing runs.
  function respondForm(q) {
    const fieldId = `respond-${q.id}`;
    const form = el(
      'form',
      { class: 'decline' },
      el('label', { for: fieldId, text: 'Or respond in the tool\'s place' }),
      el(
        'div',
        { class: 'row' },
        el('input', { type: 'text', id: fieldId, maxlength: 4000, autocomplete: 'off' }),
        el('button', { type: 'submit', class: 'primary', text: 'Respond' }),
      ),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      send(q, 'reply', { decision: 'respond', text: $(fieldId).value.trim() });
    });
    return form;
  }

  function button(text, kind, onclick) {
    return el('button', { type: 'button', class: kind, text, onclick });
  }

  // Not `disabled`: a disabled button drops the keyboard focus to the top of the page. Busy
  // controls keep the focus, look inactive, and send() ignores them until the answer is back.
  function setBusy(id, busy) {
    const card = findCard(id);
    if (!card) return;
    card.setAttribute('aria-busy', busy ? 'true' : 'false');
    for (const control of card.querySelectorAll('button')) {
      if (busy) control.setAttribute('aria-disabled', 'true');
      else control.removeAttribute('aria-disabled');
    }
    for (const input of card.querySelectorAll('input[type=text]')) input.readOnly = busy;
  }

  function isBusy(id) {
    const card = findCard(id);
    return Boolean(card) && card.getAttribute('aria-busy') === 'true';
  }

  function notice(id, text, kind) {
    const card = findCard(id);
    if (!card) return;
    const node = card.querySelector('.notice');
    node.dataset.kind = kind;
    node.textContent = text;
  }

  async function send(q, action, payload) {
    const id = q.id;
    if (isBusy(id)) return; // one answer at a time from this card
    setBusy(id, true);
    notice(id, 'Sending…', 'info');
    let response;
    let body;
    try {
      ({ response, body } = await api(`api/questions/${encodeURIComponent(id)}/${action}`, {
        method: 'POST',
        json: payload,
      }));
    } catch (error) {
      if (error instanceof NeedToken || error instanceof Outdated) return;
      setBusy(id, false);
      notice(id, 'askbridge could not be reached, so the answer may not have arrived. Try again.', 'error');
      return;
    }
    if (response.ok && body) {
      apply(body);
      if (body.status === 'pending') {
        // A vote on a question with a quorum: counted, and the question waits for more. A
        // decision on some actions of a batch: recorded, the others still to decide.
        setBusy(id, false);
        if (body.quorum) notice(id, `Vote counted. ${progressText(body)}`, 'info');
        else if (body.actions && body.actions.length) notice(id, `Recorded. ${batchProgress(body)}`, 'info');
      }
      return;
    }
    // 409 carries the question as it is now: show who won before saying why this one lost.
    if (body && body.question) apply(body.question);
    setBusy(id, false);
    notice(id, errorOf(response, body), 'error');
  }

  // ---- recently resolved --------------------------------------------------------------------

  function showResolved(q, wasPending) {
    const old = findCard(q.id);
    const item = resolvedItem(q);
    if (wasPending) item.classList.add('just-resolved');
    if (old) removeKeepingFocus(old);
    const list = $('resolved');
    const at = Date.parse(q.resolution ? q.resolution.at : 0);
    const later = [...list.children].find((other) => Number(other.dataset.at) < at);
    list.insertBefore(item, later || null);
    while (list.childElementCount > RESOLVED_SHOWN) {
      const last = list.lastElementChild;
      state.resolved.delete(last.dataset.id);
      last.remove();
    }
  }

  function resolvedItem(q) {
    const r = q.resolution || {};
    const by = r.by_name ? `${r.by_name} (${r.by})` : r.by;
    const item = el('li', {
      class: `resolved-item status-${q.status}`,
      id: `q-${q.id}`,
      'data-id': q.id,
      'data-kind': q.kind,
      'data-status': q.status,
      'data-at': Date.parse(r.at || 0),
    });
    item.append(
      el('p', { class: 'outcome', text: outcomeLine(q) }),
      el('p', { class: 'resolved-prompt', text: q.prompt }),
      el(
        'dl',
        { class: 'meta compact' },
        row('Outcome', q.status),
        row('By', by || '–'),
        row('Via', r.via || '–'),
        row('At', r.at ? el('time', { datetime: r.at, text: clock(r.at) }) : '–'),
        row('Session', q.session_id),
      ),
      el('p', { class: 'notice', role: 'status' }),
    );
    item.hidden = !matches(q);
    return item;
  }

  // A card leaving the page must not drop keyboard focus to the top of the document.
  function removeKeepingFocus(node) {
    if (!node.contains(document.activeElement)) {
      node.remove();
      return;
    }
    const next = nextVisible(node);
    node.remove();
    const target = next && next.querySelector('button:not([disabled]), input, [tabindex]');
    (target || $('pending-title')).focus();
  }

  function nextVisible(node) {
    for (let n = node.nextElementSibling; n; n = n.nextElementSibling) if (!n.hidden) return n;
    for (let n = node.previousElementSibling; n; n = n.previousElementSibling) if (!n.hidden) return n;
    return null;
  }

  // ---- filters and counts -------------------------------------------------------------------

  function matches(q) {
    const { session, surface } = state.filters;
    return (!session || q.session_id === session) && (!surface || surfacesOf(q).includes(surface));
  }

  function refreshLists() {
    const sessions = new Set();
    const surfaces = new Set();
    for (const q of [...state.pending.values(), ...state.resolved.values()]) {
      sessions.add(q.session_id);
      for (const s of surfacesOf(q)) surfaces.add(s);
    }
    fillSelect($('filter-session'), sessions, 'All sessions', (s) => s);
    fillSelect($('filter-surface'), surfaces, 'All surfaces', (s) =>
      s === 'api' ? 'api (no chat targets)' : s,
    );
    let shown = 0;
    for (const card of $('pending').children) {
      const q = state.pending.get(card.dataset.id);
      card.hidden = !(q && matches(q));
      if (!card.hidden) shown += 1;
    }
    let resolvedShown = 0;
    for (const item of $('resolved').children) {
      const q = state.resolved.get(item.dataset.id);
      item.hidden = !(q && matches(q));
      if (!item.hidden) resolvedShown += 1;
    }
    const total = state.pending.size;
    $('pending-count').textContent =
      shown === total ? `(${total})` : `(${shown} shown of ${total})`;
    $('pending-empty').hidden = shown > 0;
    $('pending-empty').textContent = total
      ? 'No pending questions match the filters.'
      : 'No pending questions.';
    $('resolved-empty').hidden = resolvedShown > 0;
  }

  // Rebuilt only when the set of values changes, so an open drop-down is not disturbed; the
  // current choice stays even when nothing matches it any more.
  function fillSelect(select, values, allLabel, labelOf) {
    const chosen = select.value;
    const all = [...values];
    if (chosen && !values.has(chosen)) all.push(chosen);
    all.sort();
    const key = all.join('\n');
    if (select.dataset.key === key) return;
    select.dataset.key = key;
    select.replaceChildren(
      el('option', { value: '', text: allLabel }),
      ...all.map((v) => el('option', { value: v, text: labelOf(v) })),
    );
    select.value = chosen;
  }

  function onFilter() {
    state.filters.session = $('filter-session').value;
    state.filters.surface = $('filter-surface').value;
    refreshLists();
  }

  // ---- countdowns and the summary -----------------------------------------------------------

  function tick() {
    const t = now();
    for (const node of document.querySelectorAll('#pending .countdown')) updateCountdown(node, t);
  }

  function updateCountdown(node, t) {
    const left = Date.parse(node.dataset.expires) - t;
    const text = timeLeft(left);
    if (node.textContent !== text) node.textContent = text;
    node.classList.toggle('urgent', left < 60 * 1000);
  }

  let statsTimer = null;
  let statsLast = 0;

  function scheduleStats() {
    if (statsTimer !== null) return;
    const wait = Math.max(0, statsLast + STATS_AT_MOST_MS - Date.now());
    statsTimer = setTimeout(() => {
      statsTimer = null;
      refreshStats().catch(() => {});
    }, wait);
  }

  // The last figures from /api/stats, moved along by each live event in between, so the summary
  // changes with the cards instead of trailing them until the next (throttled) refresh.
  let lastStats = null;

  async function refreshStats() {
    statsLast = Date.now();
    const { response, body: s } = await api('api/stats');
    const summary = $('summary');
    if (!response.ok || !s) {
      summary.textContent = `Summary unavailable: ${errorOf(response, s)}`;
      return;
    }
    lastStats = s;
    renderSummary(s);
  }

  function countInSummary(q, wasPending) {
    if (!lastStats || Date.now() - conn.liveSince <= 1500) return;
    if (q.status === 'pending') {
      lastStats.pending += 1;
    } else if (wasPending) {
      lastStats.pending = Math.max(0, lastStats.pending - 1);
      if (q.status in lastStats.last_hour) lastStats.last_hour[q.status] += 1;
    }
    renderSummary(lastStats);
  }

  function renderSummary(s) {
    const summary = $('summary');
    const h = s.last_hour;
    const parts = [`${h.answered} answered`, `${h.declined} declined`, `${h.expired} expired`];
    if (h.cancelled) parts.push(`${h.cancelled} cancelled`);
    const t = s.time_to_answer_s;
    const timing =
      t.p50 === null ? 'no answers to time yet' : `p50 ${seconds(t.p50)}, p99 ${seconds(t.p99)}`;
    summary.replaceChildren(
      el('strong', { text: `${s.pending} pending` }),
      ` · last hour: ${parts.join(', ')} · time to answer: ${timing}`,
    );
  }

  // ---- for floor.js: the other views use the same requests, token and event stream -----------

  const hooks = { events: [], connected: [], form: null, batch: null };
  window.askbridgeOps = Object.freeze({
    visible,
    api,
    el,
    jsonEditForm,
    errorOf,
    now,
    clock,
    seconds,
    onEvent: (listener) => hooks.events.push(listener),
    onConnect: (listener) => hooks.connected.push(listener),
    onForm: (render) => {
      hooks.form = render;
    },
    onBatch: (render) => {
      hooks.batch = render;
    },
  });

  // ---- start --------------------------------------------------------------------------------

  $('login-form').addEventListener('submit', onLogin);
  $('forget-token').addEventListener('click', onForget);
  $('filter-session').addEventListener('change', onFilter);
  $('filter-surface').addEventListener('change', onFilter);
  window.addEventListener('online', () => {
    if (conn.attempt > 0) connect();
  });
  setInterval(tick, 1000);
  setInterval(scheduleStats, STATS_EVERY_MS);
  $('forget-token').hidden = !state.token;
  refreshLists();
  connect();
})();
