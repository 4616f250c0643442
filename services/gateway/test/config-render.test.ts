import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TemplateProblem, renderConfig, templateProblems } from '../src/config-render.js';

const at = { template: ['body', 'template'], vars: ['body', 'vars'] };

function problem(fn: () => unknown): TemplateProblem {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof TemplateProblem, String(err));
    return err;
  }
  assert.fail('no problem raised');
}

test('renders loops, conditionals, filters and set; blank lines are dropped', () => {
  const text = [
    '{% set desc = site | upper %}',
    'hostname {{ hostname }}',
    '{% for i in interfaces %}',
    'interface {{ i.name }}',
    ' description {{ desc }}-{{ loop.index }}',
    '{% if i.shutdown is defined and i.shutdown %} shutdown{% endif %}',
    '{% endfor %}',
    'ntp server {{ ntp | default("192.0.2.1") }}',
  ].join('\n');
  const lines = renderConfig(
    text,
    {
      hostname: 'R1',
      site: 'ams',
      interfaces: [{ name: 'Gi0/1' }, { name: 'Gi0/2', shutdown: true }],
    },
    at,
  );
  assert.deepEqual(lines, [
    'hostname R1',
    'interface Gi0/1',
    ' description AMS-1',
    'interface Gi0/2',
    ' description AMS-2',
    ' shutdown',
    'ntp server 192.0.2.1',
  ]);
});

test('a variable the template uses and vars does not give is named, each once', () => {
  const p = problem(() =>
    renderConfig(
      'hostname {{ hostname }}\n{% for x in vlans %}vlan {{ x }}{% endfor %}{{ hostname }}',
      {},
      at,
    ),
  );
  assert.deepEqual(
    p.issues.map((i) => [i.loc, i.type]),
    [
      [['body', 'vars', 'hostname'], 'undefined_variable'],
      [['body', 'vars', 'vlans'], 'undefined_variable'],
    ],
  );
  assert.match(p.issues[0]!.msg, /undefined variable "hostname"/);
});

test('a variable the template guards (is defined, default) is optional; used unguarded when absent, a render error', () => {
  const text =
    '{% if ntp is defined %}ntp server {{ ntp }}{% endif %}\nlogging {{ log | default("none") }}';
  assert.deepEqual(renderConfig(text, {}, at), ['logging none']);
  assert.deepEqual(renderConfig(text, { ntp: '192.0.2.1', log: 'x' }, at), [
    'ntp server 192.0.2.1',
    'logging x',
  ]);
  const p = problem(() => renderConfig('{% if x is defined %}{% endif %}{{ x }}', {}, at));
  assert.equal(p.issues[0]!.type, 'template_error');
});

test('a missing member of a given variable is a render error naming the place', () => {
  const p = problem(() => renderConfig('mtu {{ iface.mtu }}', { iface: {} }, at));
  assert.deepEqual(p.issues[0]!.loc, ['body', 'template']);
  assert.equal(p.issues[0]!.type, 'template_error');
});

test('include, import and extends are refused: no loader', () => {
  for (const text of [
    '{% include "x.j2" %}',
    '{% import "m.j2" as m %}',
    '{% from "m.j2" import a %}',
    '{% extends "base.j2" %}',
  ]) {
    const issues = templateProblems(text, at);
    assert.equal(issues.length, 1, text);
    assert.match(issues[0]!.msg, /may not include, import or extend/);
  }
});

test('a syntax error is a 422 issue at the template', () => {
  const issues = templateProblems('{% for x in %}', at);
  assert.equal(issues[0]!.type, 'template_syntax');
  assert.deepEqual(issues[0]!.loc, ['body', 'template']);
});

test('a template reaches nothing beyond its vars: no constructor, prototype or method', () => {
  const escapes = [
    '{{ range.constructor("return process")() }}',
    '{{ name.constructor.constructor("return 1")() }}',
    '{{ cfg["__proto__"] }}',
  ];
  for (const text of escapes) {
    assert.throws(() => renderConfig(text, { name: 'x', cfg: {} }, at), TemplateProblem, text);
  }
  // An inherited name at the top is a variable vars must give, never Object.prototype's.
  const p = problem(() => renderConfig('{{ constructor }}', {}, at));
  assert.deepEqual(p.issues[0]!.loc, ['body', 'vars', 'constructor']);
});

test('templates larger than 64 KiB are refused', () => {
  const issues = templateProblems('x'.repeat(64 * 1024 + 1), at);
  assert.equal(issues[0]!.type, 'string_too_long');
});
