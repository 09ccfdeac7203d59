// askbridge's ops page: an approval of several actions (a batch). The card lists the actions,
// numbered, each with its tool and whole arguments and either its decision (once made, by
// whom) or the controls of exactly the decisions it offers: Allow once / Always allow, an edit
// of its arguments as JSON, a response, a rejection with an optional reason. "Approve all" and
// "Reject all" decide every action still undecided. Each decision carries the batch digest, so
// it binds to the actions shown; askbridge's own checks decide what fits, and its words come
// back on the card. All text is written as text nodes.
'use strict';

(() => {
  const ops = window.askbridgeOps;
  if (!ops) return;
  const { el, visible, jsonEditForm } = ops;

  // How a decision reads, as the chat surfaces word it.
  function decisionText(d) {
    const who = d.by_rule ? `rule ${d.rule_id}` : d.by_name || d.by;
    switch (d.decision) {
      case 'once':
        return d.by_rule ? `✅ allowed by ${who}` : `✅ allowed once by ${who}`;
      case 'always':
        return `✅ always allowed by ${who}`;
      case 'edit':
        return `✏️ approved with changes by ${who}: ${visible(JSON.stringify(d.args))}`;
      case 'respond':
        return `💬 responded by ${who}: ${d.text || ''}`;
      default:
        return `🚫 rejected by ${who}${d.message ? `: ${d.message}` : ''}`;
    }
  }

  function button(text, kind, onclick) {
    return el('button', { type: 'button', class: kind, text, onclick });
  }

  // A text input and its submit button, sending what was typed.
  function wordsForm(id, label, verb, kind, submit) {
    const form = el(
      'form',
      { class: 'decline' },
      el('label', { for: id, text: label }),
      el(
        'div',
        { class: 'row' },
        el('input', { type: 'text', id, maxlength: 4000, autocomplete: 'off' }),
        el('button', { type: 'submit', class: kind, text: verb }),
      ),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      submit(document.getElementById(id).value.trim());
    });
    return form;
  }

  // One action: what it is, then its decision or its controls.
  function actionItem(q, item, send) {
    const n = item.n;
    const digest = q.digest;
    const decide = (payload) => send(q, 'reply', { action: n, digest, ...payload });
    const li = el(
      'li',
      { class: 'batch-action', 'data-n': n, 'aria-label': `Action ${n}` },
      el('p', { class: 'action-tool', text: `${n}. ${visible(item.tool)}` }),
      el('pre', { class: 'action-args', tabindex: 0, text: visible(JSON.stringify(item.args, null, 2), '\n') }),
    );
    if (item.decision) {
      li.append(el('p', { class: 'batch-decision', text: decisionText(item.decision) }));
      return li;
    }
    const allowed = item.allowed && item.allowed.length ? item.allowed : ['once', 'always', 'reject'];
    const buttons = [];
    if (allowed.includes('once')) buttons.push(button('Allow once', 'primary', () => decide({ decision: 'once' })));
    if (allowed.includes('always')) buttons.push(button('Always allow', 'primary', () => decide({ decision: 'always' })));
    if (buttons.length) li.append(el('div', { class: 'buttons', role: 'group', 'aria-label': `Decide action ${n}` }, ...buttons));
    const id = (what) => `${what}-${q.id}-${n}`;
    if (allowed.includes('edit')) {
      li.append(jsonEditForm(id('edit'), item.args, (args) => decide({ decision: 'edit', args })));
    }
    if (allowed.includes('respond')) {
      li.append(wordsForm(id('respond'), 'Or respond in the tool\'s place', 'Respond', 'primary', (text) => decide({ decision: 'respond', text })));
    }
    if (allowed.includes('reject')) {
      li.append(wordsForm(id('reason'), 'Reason (optional)', 'Reject', 'danger', (message) => decide(message ? { decision: 'reject', message } : { decision: 'reject' })));
    }
    return li;
  }

  // The whole batch: the list, then "Approve all" / "Reject all" when every undecided action
  // offers them and more than one is left.
  ops.onBatch((q, send) => {
    const box = el('div', { class: 'batch' });
    const list = el('ol', { class: 'batch-actions', 'aria-label': 'The actions' });
    for (const item of q.actions) list.append(actionItem(q, item, send));
    box.append(el('p', { class: 'action-digest', text: `${q.actions.length} actions, digest ${String(q.digest || '').slice(0, 8)}` }), list);
    const open = q.actions.filter((item) => !item.decision);
    const offers = (word) => open.length > 1 && open.every((item) => (item.allowed && item.allowed.length ? item.allowed : ['once', 'always', 'reject']).includes(word));
    const all = el('div', { class: 'batch-all' });
    if (offers('once')) {
      all.append(el('div', { class: 'buttons', role: 'group', 'aria-label': 'Every action still undecided' }, button('Approve all', 'primary', () => send(q, 'reply', { all: 'once', digest: q.digest }))));
    }
    if (offers('reject')) {
      all.append(wordsForm(`reason-${q.id}-all`, 'Reason for rejecting all (optional)', 'Reject all', 'danger', (message) => send(q, 'reply', message ? { all: 'reject', message, digest: q.digest } : { all: 'reject', digest: q.digest })));
    }
    if (all.childElementCount) box.append(all);
    return box;
  });
})();
