// askbridge's ops page: a form question as one real form. Each field becomes the control its
// type calls for (a select for a choice, a checkbox for yes/no, checkboxes for a multi-select, a
// number, date, email or text input otherwise), labelled with its title and marked when
// required; the whole object goes in one reply, and askbridge's own check decides what fits (its
// words come back on the card when something does not). All text is written as text nodes.
'use strict';

(() => {
  const ops = window.askbridgeOps;
  if (!ops) return;
  const { el } = ops;

  const INPUT_TYPES = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' };

  function labelText(name, field, required) {
    return `${field.title || name}${required ? ' (required)' : ''}`;
  }

  // The control for one field, and how to read its value back (undefined: left out).
  function control(q, name, field, required) {
    const id = `form-${q.id}-${name}`;
    const label = labelText(name, field, required);
    const help = field.description ? el('p', { class: 'help', text: field.description }) : null;
    if (field.type === 'boolean') {
      const box = el('input', { type: 'checkbox', id, name });
      box.checked = field.default === true;
      return {
        node: el('div', { class: 'check' }, box, el('label', { for: id, text: label }), help),
        read: () => box.checked,
      };
    }
    if (field.type === 'array') {
      const names = field.enumNames || [];
      const fieldset = el('fieldset', {}, el('legend', { text: label }));
      const boxes = field.items.enum.map((choice, i) => {
        const boxId = `${id}-${i}`;
        const box = el('input', { type: 'checkbox', id: boxId, value: choice });
        fieldset.append(el('div', { class: 'check' }, box, el('label', { for: boxId, text: names[i] || choice })));
        return box;
      });
      if (help) fieldset.append(help);
      return { node: fieldset, read: () => boxes.filter((b) => b.checked).map((b) => b.value) };
    }
    let input;
    if (field.enum) {
      const names = field.enumNames || [];
      input = el('select', { id, name, required }, required ? null : el('option', { value: '', text: '—' }));
      field.enum.forEach((choice, i) => input.append(el('option', { value: choice, text: names[i] || choice })));
      if (field.default !== undefined) input.value = field.default;
    } else {
      const numeric = field.type === 'integer' || field.type === 'number';
      const type = numeric ? 'number' : INPUT_TYPES[field.format] || 'text';
      input = el('input', { type, id, name, autocomplete: 'off', spellcheck: 'false' });
      if (numeric) input.step = field.type === 'integer' ? '1' : 'any';
      if (field.minimum !== undefined) input.min = String(field.minimum);
      if (field.maximum !== undefined) input.max = String(field.maximum);
      if (field.maxLength !== undefined) input.maxLength = field.maxLength;
      if (field.default !== undefined) input.value = String(field.default);
      if (required) input.required = true;
    }
    const read = () => {
      const text = input.value.trim();
      if (text === '') return undefined;
      if (field.type === 'integer') return Number.parseInt(text, 10);
      if (field.type === 'number') return Number(text);
      return text;
    };
    return { node: el('div', { class: 'field' }, el('label', { for: id, text: label }), input, help), read };
  }

  ops.onForm((q, submit, verb = 'Submit') => {
    const required = new Set(q.form.required || []);
    const form = el('form', { class: 'form-fields', 'aria-label': q.prompt, novalidate: true });
    const controls = Object.entries(q.form.properties).map(([name, field]) => {
      const made = control(q, name, field, required.has(name));
      form.append(made.node);
      return [name, made.read];
    });
    form.append(el('div', { class: 'buttons' }, el('button', { type: 'submit', class: 'primary', text: verb })));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const answer = {};
      for (const [name, read] of controls) {
        const value = read();
        if (value !== undefined) answer[name] = value;
      }
      submit(answer);
    });
    return form;
  });
})();
