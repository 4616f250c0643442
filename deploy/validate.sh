#!/usr/bin/env bash
# Validates everything under deploy/ on a machine without Docker or a Kubernetes cluster:
#   1. every NATS config (deploy/nats/*.conf) passes `nats-server -t` (config test), with the
#      container paths (store dirs, TLS files) and environment variables substituted;
#   2. the Kubernetes manifests and the compose file pass deploy/validate-manifests.mjs;
#   3. if kubectl is installed, `kubectl kustomize deploy/k8s` renders (offline);
#   4. the Grafana dashboards (deploy/grafana/*.json) pass deploy/validate-dashboard.mjs.
# Exits non-zero on any failure. Needs nats-server (NATS_SERVER_BIN, PATH or /usr/sbin), openssl
# and node with the repository's node_modules.
#
#   bash deploy/validate.sh            # VALIDATE_STRICT=1 also fails on warnings
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
failures=0
say() { printf '%s\n' "$*"; }
bad() { printf 'FAIL: %s\n' "$*" >&2; failures=$((failures + 1)); }

nats_bin="${NATS_SERVER_BIN:-}"
if [ -z "$nats_bin" ]; then
  nats_bin="$(command -v nats-server || true)"
  [ -z "$nats_bin" ] && [ -x /usr/sbin/nats-server ] && nats_bin=/usr/sbin/nats-server
fi
if [ -z "$nats_bin" ] || [ ! -x "$nats_bin" ]; then
  say "FAIL: nats-server not found on PATH (set NATS_SERVER_BIN)" >&2
  exit 2
fi
command -v openssl >/dev/null || { say "FAIL: openssl not found" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/svc-validate-XXXXXX")"
trap 'rm -rf "$work"' EXIT

# ---- 1. NATS configs ----------------------------------------------------------------------------
# A throwaway CA and server certificate stand in for /etc/nats/tls (nats-server -t loads them).
tls="$work/tls"
mkdir -p "$tls"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=svc-validate-ca" \
  -keyout "$tls/ca.key" -out "$tls/ca.crt" >/dev/null 2>&1
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
  -keyout "$tls/server.key" -out "$tls/server.csr" >/dev/null 2>&1
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" -CAcreateserial \
  -days 1 -out "$tls/server.crt" >/dev/null 2>&1

# Variables the example configs read from the environment.
export SITE_A_LEAF_PASSWORD=validate-only
export HUB_LEAF_URL_1=tls://site-a:validate-only@127.0.0.1:7422
export HUB_LEAF_URL_2=tls://site-a:validate-only@127.0.0.1:7423
export HUB_LEAF_URL_3=tls://site-a:validate-only@127.0.0.1:7424
for user in GATEWAY DISPATCHER ACTOR REAPER EVENTS; do export "NATS_${user}_PASSWORD=validate-only"; done

say "nats-server: $("$nats_bin" --version 2>&1)"
shopt -s nullglob
confs=("$here"/nats/*.conf)
[ "${#confs[@]}" -ge 7 ] || bad "expected n1..n3, leaf-hub, leaf-site-a, accounts and permissions under deploy/nats, found ${#confs[@]}"
# All files first: the node configs include accounts.conf and permissions.conf from their folder.
for conf in "${confs[@]}"; do
  name="$(basename "$conf" .conf)"
  mkdir -p "$work/store/$name"
  sed -e "s#/data/jetstream#$work/store/$name#g" -e "s#/etc/nats/tls#$tls#g" "$conf" >"$work/$name.conf"
done
for conf in "${confs[@]}"; do
  name="$(basename "$conf" .conf)"
  # Included files are checked through the configs that include them.
  case "$name" in accounts | permissions) continue ;; esac
  out="$work/$name.conf"
  if msg="$("$nats_bin" -t -c "$out" 2>&1)"; then
    say "ok   nats-server -t deploy/nats/$name.conf"
  else
    bad "nats-server -t deploy/nats/$name.conf: $msg"
  fi
done

# The cluster files must agree: same cluster name and routes, distinct server names.
for key in 'name: svc' 'nats-route://n1:6222' 'nats-route://n2:6222' 'nats-route://n3:6222'; do
  for i in 1 2 3; do
    grep -qF "$key" "$here/nats/n$i.conf" || bad "deploy/nats/n$i.conf lacks '$key'"
  done
done
names="$(grep -h '^server_name:' "$here"/nats/n[123].conf | sort -u | wc -l)"
[ "$names" -eq 3 ] || bad "deploy/nats/n1..n3 do not have three distinct server_name values"
# A leaf without JetStream needs the JetStream deny lifted on both sides (see leaf-hub.conf).
for f in leaf-hub leaf-site-a; do
  grep -q '^default_js_domain' "$here/nats/$f.conf" || bad "deploy/nats/$f.conf lacks default_js_domain"
done
# Every server a client reaches has users: none runs without authentication.
for f in n1 n2 n3 leaf-hub; do
  grep -q '^include ./accounts.conf' "$here/nats/$f.conf" || bad "deploy/nats/$f.conf does not include accounts.conf"
done
grep -q '^accounts' "$here/nats/leaf-site-a.conf" || bad "deploy/nats/leaf-site-a.conf has no accounts"
# The site's actor user is a copy of the cluster's (nats-server -t refuses an unused include).
actor_block() { awk '/^ACTOR_PERMISSIONS = \{/,/^\}/' "$1"; }
[ "$(actor_block "$here/nats/permissions.conf")" = "$(actor_block "$here/nats/leaf-site-a.conf")" ] ||
  bad "ACTOR_PERMISSIONS differ between deploy/nats/permissions.conf and leaf-site-a.conf"
# Stored results (object store svc-results) are written by the actor alone, and the only purge
# granted anywhere is the actor's of that stream (a replaced or failed object put needs it).
perm_block() { awk "/^$1_PERMISSIONS = \\{/,/^\\}/" "$here/nats/permissions.conf"; }
actor_block "$here/nats/permissions.conf" | grep -qF '"$O.svc-results.>"' ||
  bad "ACTOR_PERMISSIONS do not let the actor write svc-results (\$O.svc-results.>)"
for user in GATEWAY DISPATCHER REAPER EVENTS; do
  if perm_block "$user" | grep -qE '"\$O\.|STREAM\.PURGE'; then
    bad "${user}_PERMISSIONS may write or purge stored results (only the actor may)"
  fi
done
if actor_block "$here/nats/permissions.conf" | grep -oE 'STREAM\.PURGE[^"]*' | grep -vqx 'STREAM\.PURGE\.OBJ_svc-results'; then
  bad "ACTOR_PERMISSIONS purge a stream other than OBJ_svc-results"
fi
if grep -q '^jetstream' "$here/nats/leaf-site-a.conf"; then
  bad "deploy/nats/leaf-site-a.conf must not enable JetStream (the hub serves it)"
fi

# ---- 2. Kubernetes manifests and compose file ------------------------------------------------------
strict=()
[ "${VALIDATE_STRICT:-0}" = 1 ] && strict=(--strict)
if (cd "$root" && node "$here/validate-manifests.mjs" "${strict[@]}"); then
  say "ok   deploy/validate-manifests.mjs"
else
  bad "deploy/validate-manifests.mjs"
fi

# ---- 3. kustomize render (offline) --------------------------------------------------------------------
if command -v kubectl >/dev/null 2>&1; then
  if msg="$(kubectl kustomize "$here/k8s" 2>&1 >/dev/null)"; then
    say "ok   kubectl kustomize deploy/k8s"
  else
    bad "kubectl kustomize deploy/k8s: $msg"
  fi
else
  say "skip kubectl kustomize (kubectl not installed)"
fi

# ---- 4. Grafana dashboards ---------------------------------------------------------------------------
if (cd "$root" && node "$here/validate-dashboard.mjs"); then
  say "ok   deploy/validate-dashboard.mjs"
else
  bad "deploy/validate-dashboard.mjs"
fi

if [ "$failures" -gt 0 ]; then
  say "deploy/validate.sh: $failures failure(s)" >&2
  exit 1
fi
say "deploy/validate.sh: all checks passed"
