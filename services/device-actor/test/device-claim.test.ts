import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, SvcError } from '@svc/proto';
import { DeviceClaim, DeviceLocks } from '../src/actor-host/device-claim.js';
import type { DeviceHolds } from '../src/actor-host/cluster-claims.js';

const never = new AbortController().signal;

test('when a second job claims a device key another job holds, then it gets it only once the first lets go', async () => {
  const locks = new DeviceLocks(1);
  const first = new DeviceClaim(locks);
  const second = new DeviceClaim(locks);
  await first.take('default|hostkey:SHA256:a', never);
  let granted = false;
  const waiting = second.take('default|hostkey:SHA256:a', never).then(() => {
    granted = true;
  });
  // Another device is not held back.
  assert.equal(await new DeviceClaim(locks).tryTake('default|hostkey:SHA256:b'), true);
  assert.equal(granted, false);
  first.release();
  await waiting;
  assert.equal(second.held, 'default|hostkey:SHA256:a');
});

test('when the key is busy at the handshake, then tryTake says so and names it', async () => {
  const locks = new DeviceLocks(1);
  assert.equal(await new DeviceClaim(locks).tryTake('k'), true);
  const late = new DeviceClaim(locks);
  assert.equal(await late.tryTake('k'), false);
  assert.equal(late.busy, 'k');
  assert.equal(late.held, null);
});

test('when a waiting job is cancelled, then it stops waiting with the cancel and takes no place', async () => {
  const locks = new DeviceLocks(1);
  const holder = new DeviceClaim(locks);
  await holder.take('k', never);
  const cancel = new AbortController();
  const waiter = new DeviceClaim(locks).take('k', cancel.signal);
  cancel.abort(new SvcError(ErrorCode.CANCELLED, 'job cancelled by its submitter'));
  await assert.rejects(waiter, (err: unknown) => (err as SvcError).code === ErrorCode.CANCELLED);
  holder.release();
  assert.equal(locks.size, 0);
  assert.equal(await new DeviceClaim(locks).tryTake('k'), true);
});

test('when DEVICE_MAX_SESSIONS is 2, then two jobs hold a device key at once', async () => {
  const locks = new DeviceLocks(2);
  assert.equal(await new DeviceClaim(locks).tryTake('k'), true);
  assert.equal(await new DeviceClaim(locks).tryTake('k'), true);
  assert.equal(await new DeviceClaim(locks).tryTake('k'), false);
});

/** The cluster side of the claims, as a job's claim uses it: what it was asked, in order. */
function holds(answer: boolean) {
  const asked: string[] = [];
  const impl: DeviceHolds = {
    hold: (device) => {
      asked.push(`hold ${device}`);
      return Promise.resolve();
    },
    tryHold: (device) => {
      asked.push(`tryHold ${device}`);
      return Promise.resolve(answer);
    },
    release: (device) => void asked.push(`release ${device}`),
    keepWhileOpen: (device) => void asked.push(`keep ${device}`),
  };
  return { asked, impl };
}

test('when the device is claimed by another host at the handshake, then the job gives its place here back and names the key busy', async () => {
  const locks = new DeviceLocks(1);
  const cluster = holds(false);
  const claim = new DeviceClaim(locks, cluster.impl);
  assert.equal(await claim.tryTake('k'), false);
  assert.equal(claim.busy, 'k');
  assert.equal(claim.held, null);
  assert.equal(locks.size, 0);
  assert.deepEqual(cluster.asked, ['tryHold k']);
});

test('when a job holds a device, then its sessions keep the cluster claim and its end lets go of both', async () => {
  const locks = new DeviceLocks(1);
  const cluster = holds(true);
  const claim = new DeviceClaim(locks, cluster.impl);
  await claim.take('k', never);
  claim.keepWhileOpen(Promise.resolve());
  claim.release();
  claim.release();
  assert.equal(locks.size, 0);
  assert.deepEqual(cluster.asked, ['hold k', 'keep k', 'release k']);
});

test('when a job lets go of its claim while a handshake still waits for the cluster claim, then the late answer takes nothing and gives the device back', async () => {
  // The login failed (its timer, a cancel) and the job ended; the host-key check of its
  // handshake, still running, gets the cluster's answer only now.
  const locks = new DeviceLocks(1);
  const asked: string[] = [];
  let answer: (held: boolean) => void = () => undefined;
  const cluster: DeviceHolds = {
    hold: () => Promise.resolve(),
    tryHold: (device) => {
      asked.push(`tryHold ${device}`);
      return new Promise<boolean>((resolve) => (answer = resolve));
    },
    release: (device) => void asked.push(`release ${device}`),
    keepWhileOpen: () => undefined,
  };
  const claim = new DeviceClaim(locks, cluster);
  const late = claim.tryTake('k');
  claim.release();
  answer(true);
  assert.equal(await late, false);
  assert.equal(claim.held, null);
  assert.equal(locks.size, 0, 'the place on this host is given back');
  assert.deepEqual(asked, ['tryHold k', 'release k']);
  // The device's next job is not held back by it.
  assert.equal(await new DeviceClaim(locks).tryTake('k'), true);
});
