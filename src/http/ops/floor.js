// askbridge's ops page, second floor: waiting runs, "always allow" rules, the audit trail and
// the history of resolved questions, each a view of its own beside the pending questions.
//
// It uses what ops.js exposes (window.askbridgeOps): the same token, the same requests and the
// same event stream, whose run.* and rule.* events keep the runs and rules views live. Every
// list is served a page at a time (newest first, with a `next` cursor), so a view opens as fast
// with a hundred thousand items as with ten. All text is written as text nodes, never as HTML.
'use strict';

(() => {
  const ops = window.askbridgeOps;
  if (!ops) return;
  const { api, el, errorOf, visible } = ops;
  const $ = (id) => document.getElementById(id);
  const VIEWS = ['questions', 'runs', 'rules', 'audit', 'history'];
  const PAGE = 50;
  // Live events arrive in bursts under load: a view reloads at most this often.
  const RELOAD_AT_MOST_MS = 500;

  function announce(text) {
    const node = $('announcer');
    node.append(el('p', { text }));
    while (node.childNodes.length > 20) node.firstChild.remove();
  }

  function ago(iso) {
    const s = Math.max(0, (ops.now() - Date.parse(iso)) / 1000);
    return ops.seconds(s);
  }

  function stamp(iso) {
    const d = new Date(iso);
    return `${d.toISOString().slice(0, 10)} ${ops.clock(iso)}`;
  }

  function valueText(value) {
    if (value === null || value === undefined) return '';
    if (typeof value === 'string') return value;
    if (Array.isArray(value)) return value.map(valueText).join(', ');
    return JSON.stringify(value);
  }

  function query(params) {
    const parts = [];
    for (const [key, value] of Object.entries(params)) {
      if (value === null || value === undefined || value === '') continue;
      parts.push(`${key}=${encodeURIComponent(value)}`);
    }
    return parts.join('&');
  }

  // ---- a paged list: first page on (re)load, older pages on "more" ---------------------------

  function pagedList({ name, key, url, row, empty }) {
    const list = $(name);
    const status = $(`${name}-status`);
    const more = $(`${name}-more`);
    const st = { next: null, seq: 0, timer: null, last: 0 };

    async function load(append) {
      const seq = ++st.seq;
      st.last = Date.now();
      let result;
      try {
        result = await api(url(append ? st.next : null));
      } catch (_) {
        return; // the token prompt took over, or the page moved on
      }
      if (seq !== st.seq) return;
      const { response, body } = result;
      if (!response.ok || !body) {
        status.textContent = `Cannot load this view: ${errorOf(response, body)}`;
        status.hidden = false;
        return;
      }
      if (!append) list.replaceChildren();
      for (const item of body[key] || []) list.append(row(item));
      st.next = body.next || null;
      more.hidden = !st.next;
      const count = list.children.length;
      status.hidden = count > 0;
      status.textContent = count ? '' : empty();
      list.dataset.loaded = String(Number(list.dataset.loaded || 0) + 1);
    }

    more.addEventListener('click', () => load(true));
    return {
      reload: () => load(false),
      // A live change: reload the first page soon, not once per event.
      soon() {
        if (st.timer !== null) return;
        const wait = Math.max(0, st.last + RELOAD_AT_MOST_MS - Date.now());
        st.timer = setTimeout(() => {
          st.timer = null;
          load(false);
        }, wait);
      },
      list,
      status,
    };
  }

  // ---- runs ---------------------------------------------------------------------------------

  function journalEntry(entry) {
    if (entry.type === 'step') {
      return el('li', { text: `Step ${entry.name}: ${valueText(entry.value)}` });
    }
    const by = entry.by ? ` by ${entry.by}` : '';
    const value = entry.value !== null && entry.value !== undefined ? `: ${valueText(entry.value)}` : '';
    const message = entry.message ? ` (“${entry.message}”)` : '';
    return el('li', { text: `${entry.prompt} → ${entry.status}${value}${by}${message}` });
  }

  async function toggleJournal(run, button, box) {
    const open = button.getAttribute('aria-expanded') === 'true';
    button.setAttribute('aria-expanded', String(!open));
    box.hidden = open;
    if (open) return;
    box.replaceChildren(el('p', { class: 'muted', text: 'Loading the journal…' }));
    let result;
    try {
      result = await api(`api/runs/${encodeURIComponent(run.id)}`);
    } catch (_) {
      return;
    }
    const { response, body } = result;
    if (!response.ok || !body) {
      box.replaceChildren(el('p', { class: 'error', text: errorOf(response, body) }));
      return;
    }
    const entries = body.journal || [];
    box.replaceChildren(
      entries.length
        ? el('ol', { class: 'journal' }, entries.map(journalEntry))
        : el('p', { class: 'muted', text: 'Nothing answered yet.' }),
    );
  }

  function runRow(run) {
    const origin = run.origin || {};
    const by = origin.user_name ? `@${origin.user_name} (${origin.user})` : origin.user || 'api';
    const where = origin.chat ? `in ${origin.chat}` : 'over HTTP';
    const journalId = `journal-${run.id}`;
    const journalBox = el('div', { id: journalId, class: 'journal-box', hidden: true });
    const journalButton = el('button', {
      type: 'button',
      class: 'quiet',
      'aria-expanded': 'false',
      'aria-controls': journalId,
      text: 'Journal',
    });
    journalButton.addEventListener('click', () => toggleJournal(run, journalButton, journalBox));
    const waits =
      run.state === 'waiting' && run.waiting_on
        ? el(
            'p',
            { class: 'waits' },
            'Waits on ',
            el('a', { href: `#q-${run.waiting_on}`, class: 'question-link', text: `question ${run.waiting_on}` }),
          )
        : null;
    const failed =
      run.state === 'failed' ? el('p', { class: 'error', text: `Last error: ${run.result || 'unknown'}` }) : null;
    const done = run.state === 'done' && run.result ? el('p', { class: 'muted', text: `Result: ${run.result}` }) : null;
    return el(
      'li',
      { class: `item run state-${run.state}`, id: `run-${run.id}`, 'data-run': run.id },
      el(
        'div',
        { class: 'item-head' },
        el('span', { class: `badge state-${run.state}`, text: run.state }),
        el('strong', { text: run.flow }),
        run.input ? el('span', { class: 'muted', text: run.input }) : null,
      ),
      el('p', { class: 'facts', text: `Started by ${by} ${where} · ${ago(run.created_at)} ago · run ${run.id}` }),
      waits,
      failed,
      done,
      journalButton,
      journalBox,
    );
  }

  const runs = pagedList({
    name: 'runs',
    key: 'runs',
    url: (after) => `api/runs?${query({ state: $('runs-state').value, limit: PAGE, after })}`,
    row: runRow,
    empty: () => ($('runs-state').value === 'live' ? 'No run is waiting or running.' : 'No runs to show.'),
  });
  $('runs-state').addEventListener('change', () => runs.reload());

  // ---- rules --------------------------------------------------------------------------------

  function scopeText(scope) {
    if (!scope || scope.type === 'everywhere') return 'everywhere';
    return `in session ${scope.session_id}`;
  }

  function revokeControls(rule, row) {
    const box = el('div', { class: 'revoke' });
    const ask = el('button', { type: 'button', class: 'danger', text: 'Revoke…' });
    const error = el('p', { class: 'error', role: 'alert', hidden: true });
    ask.addEventListener('click', () => {
      const confirm = el('button', { type: 'button', class: 'danger', text: 'Yes, revoke' });
      const keep = el('button', { type: 'button', class: 'quiet', text: 'Keep it' });
      const question = el('p', { class: 'confirm', text: `Revoke this rule? ${visible(rule.action.tool)} will need approval again.` });
      keep.addEventListener('click', () => {
        box.replaceChildren(ask, error);
        ask.focus();
      });
      confirm.addEventListener('click', async () => {
        confirm.disabled = true;
        let result;
        try {
          result = await api(`api/rules/${encodeURIComponent(rule.id)}`, { method: 'DELETE' });
        } catch (_) {
          return;
        }
        const { response, body } = result;
        if (response.ok || response.status === 404) {
          row.remove();
          announce(`Rule ${rule.id} revoked.`);
          rulesEmpty();
          return;
        }
        confirm.disabled = false;
        error.textContent = `Not revoked: ${errorOf(response, body)}`;
        error.hidden = false;
      });
      box.replaceChildren(question, confirm, keep, error);
      confirm.focus();
    });
    box.append(ask, error);
    return box;
  }

  function ruleRow(rule) {
    const row = el('li', { class: 'item rule', id: `rule-${rule.id}`, 'data-rule': rule.id });
    const args = visible(valueText(rule.action.args));
    row.append(
      el(
        'div',
        { class: 'item-head' },
        el('span', { class: 'badge', text: 'allow always' }),
        el('strong', { text: visible(rule.action.tool) }),
        el('code', { class: 'args', text: args.length > 200 ? `${args.slice(0, 200)}…` : args }),
      ),
      el('p', {
        class: 'facts',
        text: `Applies ${scopeText(rule.scope)} · created by ${rule.created_by} ${ago(rule.created_at)} ago (${stamp(rule.created_at)}) · rule ${rule.id} · digest ${rule.action.digest}`,
      }),
      revokeControls(rule, row),
    );
    return row;
  }

  const rules = pagedList({
    name: 'rules',
    key: 'rules',
    url: (after) => `api/rules?${query({ limit: PAGE, after })}`,
    row: ruleRow,
    empty: () => 'No rules: every approval is asked.',
  });

  function rulesEmpty() {
    const count = rules.list.children.length;
    rules.status.hidden = count > 0;
    if (!count) rules.status.textContent = 'No rules: every approval is asked.';
  }

  function onRuleEvent(name, rule) {
    if (!loaded.has('rules') || !rule || typeof rule.id !== 'string') return;
    const existing = document.getElementById(`rule-${rule.id}`);
    if (name === 'rule.created' && !existing) {
      rules.list.prepend(ruleRow(rule));
      announce(`New rule: always allow ${visible(rule.action.tool)}.`);
    } else if (name === 'rule.revoked' && existing) {
      existing.remove();
      announce(`Rule ${rule.id} revoked.`);
    }
    rulesEmpty();
  }

  // ---- audit --------------------------------------------------------------------------------

  function auditRow(entry) {
    const refused = entry.event === 'refused';
    const what = refused
      ? 'Refused'
      : entry.event === 'resolved'
        ? entry.status || 'resolved'
        : entry.event.replace('_', ' ');
    const parts = [`${entry.by || '–'} via ${entry.via || '–'}`];
    if (entry.question_id) parts.push(`question ${entry.question_id}`);
    if (entry.session_id) parts.push(`session ${entry.session_id}`);
    if (entry.rule_id) parts.push(`rule ${entry.rule_id}`);
    const value = entry.value !== null && entry.value !== undefined ? valueText(entry.value) : '';
    return el(
      'li',
      { class: `item audit${refused ? ' refused' : ''}`, 'data-event': entry.event },
      el(
        'div',
        { class: 'item-head' },
        el('span', { class: `badge ${refused ? 'refused' : `state-${entry.status || 'rule'}`}`, text: what }),
        el('time', { datetime: entry.at, text: stamp(entry.at) }),
      ),
      el('p', { class: 'facts', text: parts.join(' · ') }),
      value ? el('p', { text: `Value: ${value}` }) : null,
      entry.message ? el('p', { class: refused ? 'error' : '', text: refused ? `Why: ${entry.message}` : entry.message }) : null,
    );
  }

  const audit = pagedList({
    name: 'audit',
    key: 'entries',
    url: (before) =>
      `api/audit?${query({
        order: 'newest',
        limit: PAGE,
        before,
        session_id: $('audit-session').value.trim(),
        by: $('audit-by').value.trim(),
        outcome: $('audit-outcome').value,
      })}`,
    row: auditRow,
    empty: () => 'No records match.',
  });
  $('audit-filters').addEventListener('submit', (event) => {
    event.preventDefault();
    audit.reload();
  });

  // ---- history ------------------------------------------------------------------------------

  function historyRow(q) {
    const r = q.resolution || {};
    const details = [];
    if (r.by) details.push(`by ${r.by_name ? `@${r.by_name} (${r.by})` : r.by}`);
    if (r.via) details.push(`via ${r.via}`);
    if (r.at) details.push(`at ${stamp(r.at)}`);
    if (r.rule_id) details.push(`rule ${r.rule_id}`);
    return el(
      'li',
      { class: `item history state-${q.status}`, 'data-question': q.id },
      el(
        'div',
        { class: 'item-head' },
        el('span', { class: `badge state-${q.status}`, text: q.status }),
        el('strong', { text: q.prompt }),
      ),
      el('p', { class: 'outcome', text: q.outcome || q.status }),
      el('p', {
        class: 'facts',
        text: `${details.join(' · ')} · asked ${stamp(q.created_at)} in session ${q.session_id} · question ${q.id}`,
      }),
      r.value !== null && r.value !== undefined ? el('p', { text: `Value: ${valueText(r.value)}` }) : null,
      r.message ? el('p', { text: `Message: ${r.message}` }) : null,
    );
  }

  const history = pagedList({
    name: 'history',
    key: 'questions',
    url: (after) =>
      `api/history?${query({
        limit: PAGE,
        after,
        status: $('history-outcome').value,
        session_id: $('history-session').value.trim(),
      })}`,
    row: historyRow,
    empty: () => 'Nothing resolved matches.',
  });
  $('history-filters').addEventListener('submit', (event) => {
    event.preventDefault();
    history.reload();
  });

  // ---- views --------------------------------------------------------------------------------

  const views = { runs, rules, audit, history };
  const loaded = new Set();

  function viewOfHash() {
    const hash = location.hash.slice(1);
    if (VIEWS.includes(hash)) return hash;
    return 'questions';
  }

  function show(view, focusTitle) {
    for (const name of VIEWS) {
      $(`view-${name}`).hidden = name !== view;
      const tab = $(`tab-${name}`);
      if (name === view) tab.setAttribute('aria-current', 'page');
      else tab.removeAttribute('aria-current');
    }
    if (views[view] && !loaded.has(view)) {
      loaded.add(view);
      views[view].reload();
    }
    const subtitle = view === 'questions' ? 'pending questions' : view;
    document.title = `askbridge · ${subtitle}`;
    $('subtitle').textContent = subtitle;
    if (focusTitle) {
      const title = view === 'questions' ? $('pending-title') : $(`${view}-title`);
      if (title) title.focus();
    }
  }

  function onHash() {
    const hash = location.hash;
    show(viewOfHash(), !hash.startsWith('#q-'));
    if (hash.startsWith('#q-')) {
      // A run's question: its card, when it is still pending.
      const card = document.getElementById(hash.slice(1));
      if (card) {
        card.scrollIntoView({ block: 'center' });
        card.classList.add('linked');
        setTimeout(() => card.classList.remove('linked'), 2000);
      } else {
        announce('That question is no longer pending; see History.');
      }
    }
  }

  window.addEventListener('hashchange', onHash);

  ops.onEvent((name, data) => {
    let item;
    try {
      item = JSON.parse(data);
    } catch (_) {
      return;
    }
    if (name === 'run.waiting' || name === 'run.finished') {
      if (loaded.has('runs')) runs.soon();
    } else if (name === 'rule.created' || name === 'rule.revoked') {
      onRuleEvent(name, item);
    }
  });

  // After a reconnect, what was missed is read again.
  ops.onConnect(() => {
    for (const view of loaded) views[view].soon();
  });

  show(viewOfHash(), false);
})();
