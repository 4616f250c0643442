#!/usr/bin/env node
// Validates deploy/k8s/*.yaml and deploy/compose.yaml without a cluster or a Docker engine:
// hand-written JSON schemas of the fields svc uses (checked with Ajv), then the cross-references
// a schema cannot express (selectors, ConfigMap/Secret keys, env names against the services'
// config schemas, compose build/depends_on/volumes). Prints every problem and exits 1 if any.
//
//   node deploy/validate-manifests.mjs [--strict]
//
// --strict also fails on warnings (an env name the specification defines but no service
// config reads yet).
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseAllDocuments } from 'yaml';
import AjvModule from 'ajv';

const Ajv = AjvModule.default ?? AjvModule;
const deployDir = dirname(fileURLToPath(import.meta.url));
const root = resolve(deployDir, '..');
const strict = process.argv.includes('--strict');
const problems = [];
const warnings = [];
const fail = (where, msg) => problems.push(`${where}: ${msg}`);
const warn = (where, msg) => warnings.push(`${where}: ${msg}`);
const rel = (p) => relative(root, p);

// ---- Env names each service reads ----------------------------------------------------------------

/** Services by the path in their command, with the sources of their config schema. */
const SERVICES = {
  gateway: 'services/gateway/src/config.ts',
  dispatcher: 'services/dispatcher/src/config.ts',
  'device-actor': 'services/device-actor/src/config.ts',
  reaper: 'services/reaper/src/config.ts',
};
/** Variables the specification names that no service config reads yet: a warning, not a failure. */
const SPEC_NAMED_PENDING = {
  SVC_JWT_SECRET: 'SPEC/DESIGN: HS256 secret of API keys (gateway)',
  SVC_ADMIN_SECRET: 'SPEC: Basic password of key management (gateway)',
};

/** Top-level property names of an object literal starting at `open` (index of its `{`). */
function objectKeys(src, open) {
  const keys = [];
  let depth = 0;
  let i = open;
  for (; i < src.length; i++) {
    const ch = src[i];
    if (ch === '{' || ch === '(' || ch === '[') depth++;
    else if (ch === '}' || ch === ')' || ch === ']') {
      depth--;
      if (depth === 0) break;
    } else if (depth === 1) {
      const rest = src.slice(i);
      const m = /^(?:\.\.\.([A-Za-z_$][\w$]*)|([A-Za-z_$][\w$]*)\s*:)/.exec(rest);
      const before = src[i - 1] ?? '';
      if (m && !/[\w$.]/.test(before)) {
        keys.push(m[1] ? { spread: m[1] } : { name: m[2] });
        i += m[0].length - 1;
      }
    }
    if (ch === "'" || ch === '"' || ch === '`') {
      // skip string literals (descriptions contain colons and braces)
      const quote = ch;
      for (i++; i < src.length && src[i] !== quote; i++) if (src[i] === '\\') i++;
    } else if (ch === '/' && src[i + 1] === '/') {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (ch === '/' && src[i + 1] === '*') {
      i = src.indexOf('*/', i) + 1;
    }
  }
  return keys;
}

/** Where the settings objects a service's schema spreads in are defined. */
const SETTING_DIRS = [
  'proto/src',
  'telemetry/src',
  'nats/src',
  'config/src',
  'device-access/src',
  'webhooks/src',
  'jobs/src',
];

/**
 * Names of an exported settings object (`export const <name> = {`, or the object an
 * `export function <name>(…)` returns), wherever it is in SETTING_DIRS.
 */
function protoSettingNames(name) {
  const pattern = new RegExp(
    `export const ${name}\\s*=\\s*\\{|export function ${name}\\([^)]*\\)[^{]*\\{[^]*?return \\{`,
  );
  // The contract's settings, and those of the runtime packages a service spreads in (metrics).
  const files = SETTING_DIRS.flatMap((dir) =>
    readdirSync(join(root, dir))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join(root, dir, f)),
  );
  for (const f of files) {
    const src = readFileSync(f, 'utf8');
    const m = pattern.exec(src);
    if (m) {
      return objectKeys(src, m.index + m[0].length - 1)
        .map((k) => k.name)
        .filter(Boolean);
    }
  }
  return null;
}

function sharedSettingNames() {
  const names = protoSettingNames('SharedSettings');
  if (!names) throw new Error('no "export const SharedSettings = {"');
  return names;
}

function serviceSettingNames(file) {
  const src = readFileSync(join(root, file), 'utf8');
  const m = /Type\.Object\(\s*\{/.exec(src);
  if (!m) throw new Error(`${file}: no Type.Object({ ... })`);
  const names = new Set();
  for (const k of objectKeys(src, m.index + m[0].length - 1)) {
    if (k.name) names.add(k.name);
    else {
      const spread = protoSettingNames(k.spread);
      if (!spread) throw new Error(`${file}: cannot follow spread ...${k.spread}`);
      for (const n of spread) names.add(n);
    }
  }
  return names;
}

const settings = {};
for (const [svc, file] of Object.entries(SERVICES)) settings[svc] = serviceSettingNames(file);

// When the services are built, the compiled schemas are the truth: the source parse must agree.
for (const [svc, file] of Object.entries(SERVICES)) {
  const dist = join(root, file.replace('/src/', '/dist/src/').replace(/\.ts$/, '.js'));
  if (!existsSync(dist)) continue;
  try {
    const mod = await import(pathToFileURL(dist).href);
    const schema = Object.entries(mod).find(([k, v]) => k.endsWith('Config') && v?.properties)?.[1];
    if (!schema) continue;
    const built = new Set(Object.keys(schema.properties));
    const parsed = settings[svc];
    const diff = [...built]
      .filter((n) => !parsed.has(n))
      .concat([...parsed].filter((n) => !built.has(n)));
    if (diff.length > 0) fail(file, `source parse and built schema disagree on ${diff.join(', ')}`);
  } catch (err) {
    warn(rel(dist), `could not import the built config (${err.message}); used the source parse`);
  }
}

function serviceOfCommand(command) {
  const text = Array.isArray(command) ? command.join(' ') : String(command ?? '');
  const m = /services\/([a-z-]+)\/dist\/src\/main\.js/.exec(text);
  return m ? m[1] : null;
}

function checkEnvNames(where, svc, names) {
  const known = settings[svc];
  for (const name of names) {
    if (known.has(name)) continue;
    if (SPEC_NAMED_PENDING[name]) {
      warn(where, `${name} is not read by the ${svc} config yet (${SPEC_NAMED_PENDING[name]})`);
      continue;
    }
    fail(
      where,
      `env ${name} is not a setting of ${svc} (${SERVICES[svc]} or proto/src/shared-config.ts)`,
    );
  }
}

// ---- Schemas ---------------------------------------------------------------------------------

const ajv = new Ajv({
  allErrors: true,
  strict: true,
  strictRequired: false,
  allowUnionTypes: true,
});
const str = { type: 'string', minLength: 1 };
const labels = { type: 'object', minProperties: 1, additionalProperties: { type: 'string' } };
const metadata = {
  type: 'object',
  required: ['name'],
  properties: { name: str, namespace: str, labels, annotations: { type: 'object' } },
};
const quantity = {
  anyOf: [{ type: 'string', pattern: '^[0-9.]+(m|Ki|Mi|Gi)?$' }, { type: 'number' }],
};
const cpuMem = {
  type: 'object',
  required: ['cpu', 'memory'],
  properties: { cpu: quantity, memory: quantity },
  additionalProperties: false,
};
const probe = {
  type: 'object',
  minProperties: 1,
  properties: {
    httpGet: {
      type: 'object',
      required: ['path', 'port'],
      properties: {
        path: str,
        port: { anyOf: [str, { type: 'integer' }] },
        scheme: { enum: ['HTTP', 'HTTPS'] },
      },
    },
    tcpSocket: { type: 'object', required: ['port'] },
    exec: { type: 'object', required: ['command'] },
  },
};
const envVar = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', pattern: '^[A-Z][A-Z0-9_]*$' },
    value: { type: 'string' },
    valueFrom: {
      type: 'object',
      properties: {
        secretKeyRef: { type: 'object', required: ['name', 'key'] },
        configMapKeyRef: { type: 'object', required: ['name', 'key'] },
      },
    },
  },
  additionalProperties: false,
};
const container = {
  type: 'object',
  required: ['name', 'image', 'command', 'resources'],
  properties: {
    name: str,
    image: { type: 'string', pattern: '^[^\\s:]+(:[^\\s:]+)?$' },
    command: { type: 'array', minItems: 1, items: { type: 'string' } },
    resources: {
      type: 'object',
      required: ['requests', 'limits'],
      properties: { requests: cpuMem, limits: cpuMem },
    },
    ports: {
      type: 'array',
      items: {
        type: 'object',
        required: ['containerPort'],
        properties: { name: str, containerPort: { type: 'integer', minimum: 1, maximum: 65535 } },
      },
    },
    env: { type: 'array', items: envVar },
    envFrom: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          configMapRef: { type: 'object', required: ['name'] },
          secretRef: { type: 'object', required: ['name'] },
        },
      },
    },
    startupProbe: probe,
    readinessProbe: probe,
    livenessProbe: probe,
  },
};
const selector = {
  type: 'object',
  required: ['matchLabels'],
  properties: { matchLabels: labels },
};
const schemas = {
  Namespace: { apiVersion: 'v1', spec: null },
  ConfigMap: {
    apiVersion: 'v1',
    extra: {
      required: ['data'],
      properties: { data: { type: 'object', additionalProperties: { type: 'string' } } },
    },
  },
  Secret: {
    apiVersion: 'v1',
    extra: {
      anyOf: [{ required: ['stringData'] }, { required: ['data'] }],
      properties: {
        stringData: { type: 'object', additionalProperties: { type: 'string' } },
        data: { type: 'object', additionalProperties: { type: 'string' } },
      },
    },
  },
  Deployment: {
    apiVersion: 'apps/v1',
    spec: {
      type: 'object',
      required: ['replicas', 'selector', 'template'],
      properties: {
        replicas: { type: 'integer', minimum: 1 },
        selector,
        template: {
          type: 'object',
          required: ['metadata', 'spec'],
          properties: {
            metadata: { type: 'object', required: ['labels'], properties: { labels } },
            spec: {
              type: 'object',
              required: ['containers'],
              properties: {
                containers: { type: 'array', minItems: 1, items: container },
                terminationGracePeriodSeconds: { type: 'integer', minimum: 0 },
              },
            },
          },
        },
      },
    },
  },
  Service: {
    apiVersion: 'v1',
    spec: {
      type: 'object',
      required: ['selector', 'ports'],
      properties: {
        selector: labels,
        ports: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            required: ['port', 'targetPort'],
            properties: {
              port: { type: 'integer' },
              targetPort: { anyOf: [str, { type: 'integer' }] },
            },
          },
        },
      },
    },
  },
  PodDisruptionBudget: {
    apiVersion: 'policy/v1',
    spec: {
      type: 'object',
      required: ['selector'],
      oneOf: [{ required: ['minAvailable'] }, { required: ['maxUnavailable'] }],
      properties: { selector },
    },
  },
};
const validators = {};
for (const [kind, s] of Object.entries(schemas)) {
  validators[kind] = ajv.compile({
    type: 'object',
    required: ['apiVersion', 'kind', 'metadata', ...(s.spec ? ['spec'] : [])],
    properties: {
      apiVersion: { const: s.apiVersion },
      kind: { const: kind },
      metadata,
      ...(s.spec ? { spec: s.spec } : {}),
      ...(s.extra?.properties ?? {}),
    },
    ...(s.extra?.required
      ? { required: ['apiVersion', 'kind', 'metadata', ...s.extra.required] }
      : {}),
    ...(s.extra?.anyOf ? { anyOf: s.extra.anyOf } : {}),
  });
}
const kustomizationSchema = ajv.compile({
  type: 'object',
  required: ['apiVersion', 'kind', 'resources'],
  properties: {
    apiVersion: { const: 'kustomize.config.k8s.io/v1beta1' },
    kind: { const: 'Kustomization' },
    resources: { type: 'array', minItems: 1, items: str },
  },
});
const composeService = {
  type: 'object',
  anyOf: [{ required: ['image'] }, { required: ['build'] }],
  properties: {
    image: str,
    build: {
      anyOf: [
        str,
        { type: 'object', required: ['context'], properties: { context: str, dockerfile: str } },
      ],
    },
    command: { anyOf: [str, { type: 'array', items: { type: 'string' } }] },
    environment: {
      anyOf: [
        { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean', 'null'] } },
        { type: 'array', items: { type: 'string' } },
      ],
    },
    depends_on: {
      anyOf: [
        { type: 'array', items: str },
        {
          type: 'object',
          additionalProperties: {
            type: 'object',
            properties: {
              condition: {
                enum: ['service_started', 'service_healthy', 'service_completed_successfully'],
              },
            },
          },
        },
      ],
    },
    ports: { type: 'array', items: { type: 'string', pattern: '^(\\d+:)?\\d+(/(tcp|udp))?$' } },
    volumes: { type: 'array', items: str },
  },
};
const composeSchema = ajv.compile({
  type: 'object',
  required: ['services'],
  properties: {
    name: str,
    services: { type: 'object', minProperties: 1, additionalProperties: composeService },
    volumes: { type: ['object'] },
  },
});
const ajvErrors = (errors) =>
  (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');

// ---- Kubernetes --------------------------------------------------------------------------------

const k8sDir = join(deployDir, 'k8s');
const objects = [];
for (const file of readdirSync(k8sDir)
  .filter((f) => /\.ya?ml$/.test(f))
  .sort()) {
  const path = join(k8sDir, file);
  for (const doc of parseAllDocuments(readFileSync(path, 'utf8'), { merge: true })) {
    if (doc.errors.length > 0) {
      fail(rel(path), `YAML: ${doc.errors.map((e) => e.message).join('; ')}`);
      continue;
    }
    const obj = doc.toJS();
    if (obj === null || obj === undefined) continue;
    objects.push({ file: rel(path), base: file, obj });
  }
}
const byKind = (kind) => objects.filter((o) => o.obj.kind === kind);
const where = (o) => `${o.file} ${o.obj.kind}/${o.obj.metadata?.name ?? '?'}`;

for (const o of objects) {
  const { kind } = o.obj;
  if (kind === 'Kustomization') {
    if (!kustomizationSchema(o.obj)) fail(where(o), ajvErrors(kustomizationSchema.errors));
    for (const r of o.obj.resources ?? []) {
      if (!existsSync(join(k8sDir, r))) fail(where(o), `resource ${r} does not exist`);
    }
    const listed = new Set(o.obj.resources ?? []);
    for (const other of new Set(objects.map((x) => x.base))) {
      if (other !== o.base && !listed.has(other) && !other.includes('example')) {
        fail(where(o), `${other} is not listed in resources`);
      }
    }
    continue;
  }
  const validate = validators[kind];
  if (!validate) {
    fail(where(o), `kind ${kind} (apiVersion ${o.obj.apiVersion}) is not one svc deploys`);
    continue;
  }
  if (!validate(o.obj)) fail(where(o), ajvErrors(validate.errors));
  if (kind !== 'Namespace' && o.obj.metadata?.namespace !== 'svc') {
    fail(where(o), `metadata.namespace must be svc (is ${o.obj.metadata?.namespace})`);
  }
}

// The shipped NATS servers refuse clients without credentials (deploy/nats/accounts.conf).
const NO_NATS_CREDENTIALS =
  'no NATS credentials (NATS_USER and NATS_PASSWORD, NATS_CREDS_FILE, NATS_NKEY_SEED_FILE or NATS_TOKEN)';
const hasNatsCredentials = (names) =>
  (names.includes('NATS_USER') && names.includes('NATS_PASSWORD')) ||
  ['NATS_CREDS_FILE', 'NATS_NKEY_SEED_FILE', 'NATS_TOKEN'].some((n) => names.includes(n));

const configMaps = new Map(byKind('ConfigMap').map((o) => [o.obj.metadata.name, o.obj.data ?? {}]));
const secrets = new Map(
  byKind('Secret').map((o) => [
    o.obj.metadata.name,
    { ...(o.obj.data ?? {}), ...(o.obj.stringData ?? {}) },
  ]),
);
const matches = (sel, lbls) =>
  Object.entries(sel ?? {}).every(([k, v]) => lbls && lbls[k] === v) &&
  Object.keys(sel ?? {}).length > 0;

const deployments = byKind('Deployment');
for (const d of deployments) {
  const spec = d.obj.spec ?? {};
  const tmplLabels = spec.template?.metadata?.labels;
  if (!matches(spec.selector?.matchLabels, tmplLabels)) {
    fail(where(d), 'spec.selector.matchLabels does not match spec.template.metadata.labels');
  }
  const annotations = spec.template?.metadata?.annotations ?? {};
  for (const c of spec.template?.spec?.containers ?? []) {
    const cw = `${where(d)} container ${c.name}`;
    const svc = serviceOfCommand(c.command);
    if (!svc || !settings[svc]) {
      fail(cw, `command ${JSON.stringify(c.command)} runs no known service`);
      continue;
    }
    // Probes: every container that listens gets readiness and liveness; the gateway's
    // readiness is /healthcheck over HTTPS. Others must say why they have none.
    const hasPorts = (c.ports ?? []).length > 0;
    if (hasPorts) {
      if (!c.readinessProbe || !c.livenessProbe)
        fail(cw, 'listens but lacks a readiness or liveness probe');
    } else if (
      !c.readinessProbe &&
      !c.livenessProbe &&
      annotations['svc.example.net/probes'] !== 'none'
    ) {
      fail(cw, 'no probes and no svc.example.net/probes: none annotation saying why');
    }
    if (svc === 'gateway') {
      const r = c.readinessProbe?.httpGet;
      if (!r || r.path !== '/healthcheck' || r.scheme !== 'HTTPS') {
        fail(cw, 'gateway readinessProbe must be httpGet /healthcheck with scheme HTTPS');
      }
    }
    const portNames = new Set((c.ports ?? []).map((p) => p.name).filter(Boolean));
    for (const p of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      const port = c[p]?.httpGet?.port ?? c[p]?.tcpSocket?.port;
      if (typeof port === 'string' && !portNames.has(port))
        fail(cw, `${p} uses unknown port name ${port}`);
    }
    // Env: every reference resolves, every name is a setting of the service.
    const names = [];
    for (const ef of c.envFrom ?? []) {
      if (ef.configMapRef) {
        const cm = configMaps.get(ef.configMapRef.name);
        if (!cm) fail(cw, `envFrom ConfigMap ${ef.configMapRef.name} does not exist`);
        else names.push(...Object.keys(cm));
      }
      if (ef.secretRef) {
        const s = secrets.get(ef.secretRef.name);
        if (!s) fail(cw, `envFrom Secret ${ef.secretRef.name} does not exist`);
        else names.push(...Object.keys(s));
      }
    }
    for (const e of c.env ?? []) {
      names.push(e.name);
      const sk = e.valueFrom?.secretKeyRef;
      if (sk) {
        const s = secrets.get(sk.name);
        if (!s) fail(cw, `env ${e.name}: Secret ${sk.name} does not exist`);
        else if (!(sk.key in s)) fail(cw, `env ${e.name}: Secret ${sk.name} has no key ${sk.key}`);
      }
      const ck = e.valueFrom?.configMapKeyRef;
      if (ck) {
        const cm = configMaps.get(ck.name);
        if (!cm) fail(cw, `env ${e.name}: ConfigMap ${ck.name} does not exist`);
        else if (!(ck.key in cm))
          fail(cw, `env ${e.name}: ConfigMap ${ck.name} has no key ${ck.key}`);
      }
    }
    const dup = names.filter((n, i) => names.indexOf(n) !== i);
    if (dup.length > 0) fail(cw, `env set twice: ${[...new Set(dup)].join(', ')}`);
    checkEnvNames(cw, svc, new Set(names));
    if (!names.includes('NATS_URL')) fail(cw, 'NATS_URL is not set');
    if (!names.includes('SVC_ENCRYPTION_KEY')) fail(cw, 'SVC_ENCRYPTION_KEY is not set');
    if (!hasNatsCredentials(names)) fail(cw, NO_NATS_CREDENTIALS);
  }
  for (const v of spec.template?.spec?.volumes ?? []) {
    if (v.configMap && !configMaps.has(v.configMap.name)) {
      fail(where(d), `volume ${v.name}: ConfigMap ${v.configMap.name} does not exist`);
    }
  }
}

for (const p of byKind('PodDisruptionBudget')) {
  const sel = p.obj.spec?.selector?.matchLabels;
  const hit = deployments.filter((d) => matches(sel, d.obj.spec?.template?.metadata?.labels));
  if (hit.length === 0) fail(where(p), 'selector matches no Deployment');
  for (const d of hit) {
    const min = p.obj.spec.minAvailable;
    if (typeof min === 'number' && min >= d.obj.spec.replicas) {
      fail(
        where(p),
        `minAvailable ${min} >= replicas ${d.obj.spec.replicas} of ${d.obj.metadata.name}: nodes could never drain`,
      );
    }
  }
}
for (const s of byKind('Service')) {
  const hit = deployments.filter((d) =>
    matches(s.obj.spec?.selector, d.obj.spec?.template?.metadata?.labels),
  );
  if (hit.length === 0) {
    fail(where(s), 'selector matches no Deployment');
    continue;
  }
  for (const port of s.obj.spec.ports ?? []) {
    const ok = hit.some((d) =>
      d.obj.spec.template.spec.containers.some((c) =>
        (c.ports ?? []).some(
          (cp) => cp.name === port.targetPort || cp.containerPort === port.targetPort,
        ),
      ),
    );
    if (!ok)
      fail(where(s), `targetPort ${port.targetPort} is no container port of the selected pods`);
  }
}
for (const svc of Object.keys(SERVICES)) {
  if (
    !deployments.some((d) =>
      d.obj.spec?.template?.spec?.containers?.some((c) => serviceOfCommand(c.command) === svc),
    )
  ) {
    fail(rel(k8sDir), `no Deployment runs ${svc}`);
  }
  if (
    !byKind('PodDisruptionBudget').some((p) =>
      deployments.some(
        (d) =>
          matches(p.obj.spec?.selector?.matchLabels, d.obj.spec?.template?.metadata?.labels) &&
          d.obj.spec.template.spec.containers.some((c) => serviceOfCommand(c.command) === svc),
      ),
    )
  ) {
    warn(rel(k8sDir), `no PodDisruptionBudget covers ${svc}`);
  }
}
if (!byKind('Service').length) fail(rel(k8sDir), 'no Service (the gateway needs one)');

// ---- Compose -----------------------------------------------------------------------------------

const composePath = join(deployDir, 'compose.yaml');
const composeDoc = parseAllDocuments(readFileSync(composePath, 'utf8'), { merge: true })[0];
if (composeDoc.errors.length > 0) {
  fail(rel(composePath), `YAML: ${composeDoc.errors.map((e) => e.message).join('; ')}`);
} else {
  const compose = composeDoc.toJS({ maxAliasCount: 1000 });
  if (!composeSchema(compose)) fail(rel(composePath), ajvErrors(composeSchema.errors));
  const services = compose.services ?? {};
  const volumes = new Set(Object.keys(compose.volumes ?? {}));
  const built = new Set(
    Object.values(services)
      .filter((s) => s.build && s.image)
      .map((s) => s.image),
  );
  const natsNodes = [];
  for (const [name, s] of Object.entries(services)) {
    const w = `${rel(composePath)} services.${name}`;
    if (s.build) {
      const ctx = resolve(deployDir, typeof s.build === 'string' ? s.build : s.build.context);
      if (!existsSync(ctx)) fail(w, `build context ${ctx} does not exist`);
      const dockerfile =
        typeof s.build === 'object' && s.build.dockerfile ? s.build.dockerfile : 'Dockerfile';
      if (!existsSync(resolve(ctx, dockerfile)))
        fail(w, `Dockerfile ${dockerfile} not found in the build context`);
    } else if (s.image && !/[/:]/.test(s.image) && !built.has(s.image)) {
      fail(w, `image ${s.image} is neither built here nor a registry image with a tag`);
    } else if (s.image && /^svc[:@]/.test(s.image) && !built.has(s.image)) {
      fail(w, `image ${s.image} is not built by any service`);
    }
    const deps = Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
    for (const dep of deps) if (!services[dep]) fail(w, `depends_on ${dep}: no such service`);
    for (const [dep, cond] of Object.entries(
      Array.isArray(s.depends_on) ? {} : (s.depends_on ?? {}),
    )) {
      if (cond?.condition === 'service_healthy' && services[dep] && !services[dep].healthcheck) {
        fail(w, `depends_on ${dep} service_healthy but ${dep} has no healthcheck`);
      }
    }
    for (const v of s.volumes ?? []) {
      const [src] = v.split(':');
      if (src.startsWith('.') || src.startsWith('/')) {
        if (!existsSync(resolve(deployDir, src)))
          fail(w, `bind mount source ${src} does not exist`);
        if (/nats\.conf/.test(v)) natsNodes.push(resolve(deployDir, src));
      } else if (!volumes.has(src)) fail(w, `named volume ${src} is not declared under volumes`);
    }
    const svc = serviceOfCommand(s.command);
    if (svc) {
      const env = Array.isArray(s.environment)
        ? s.environment.map((e) => e.split('=')[0])
        : Object.keys(s.environment ?? {});
      checkEnvNames(w, svc, new Set(env));
      const envObj = Array.isArray(s.environment) ? {} : (s.environment ?? {});
      if (!env.includes('NATS_URL')) fail(w, 'NATS_URL is not set');
      if (!env.includes('SVC_ENCRYPTION_KEY')) fail(w, 'SVC_ENCRYPTION_KEY is not set');
      if (!hasNatsCredentials(env)) fail(w, NO_NATS_CREDENTIALS);
      for (const u of String(envObj.NATS_URL ?? '')
        .split(',')
        .filter(Boolean)) {
        const host = /^nats:\/\/([^:/]+)/.exec(u)?.[1];
        if (host && !services[host]) fail(w, `NATS_URL names ${host}, which is no compose service`);
      }
      if (envObj.NATS_URL && String(envObj.NATS_REPLICAS) !== '3')
        fail(w, 'NATS_REPLICAS must be 3 on the 3-node cluster');
    } else if (s.command && !/nats/.test(String(s.image))) {
      fail(w, `command ${JSON.stringify(s.command)} runs no known service`);
    }
  }
  const count = (svc) =>
    Object.values(services).filter((s) => serviceOfCommand(s.command) === svc).length;
  const want = { gateway: 2, dispatcher: 2, 'device-actor': 3, reaper: 1 };
  for (const [svc, n] of Object.entries(want)) {
    if (count(svc) < n) fail(rel(composePath), `${count(svc)} ${svc} services, want ${n}`);
  }
  if (natsNodes.length !== 3)
    fail(rel(composePath), `${natsNodes.length} NATS nodes mount a config, want 3`);
}

for (const w of warnings) console.log(`warning: ${w}`);
for (const p of problems) console.log(`error: ${p}`);
const failed = problems.length > 0 || (strict && warnings.length > 0);
console.log(
  `validate-manifests: ${objects.length} Kubernetes objects, compose file: ` +
    `${problems.length} error(s), ${warnings.length} warning(s)${failed ? '' : ': OK'}`,
);
process.exit(failed ? 1 : 0);
