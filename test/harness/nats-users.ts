// Tests that need a service user refused something: an `admin` who may do anything, and one
// restricted user, as nats-server authorization (a reload of the file changes the refusals).

/** NATS_USER and NATS_PASSWORD of a user of `natsUsers`, as a service reads them. */
export function natsCredentials(user: string): { NATS_USER: string; NATS_PASSWORD: string } {
  return { NATS_USER: user, NATS_PASSWORD: `${user}-pass` };
}

/** `admin`, and `user` refused publishing to the subjects of `deny` (everything else allowed). */
export function natsUsers(user: string, deny: string[]): string {
  const denied = deny.map((s) => JSON.stringify(s)).join(', ');
  const password = (u: string) => JSON.stringify(natsCredentials(u).NATS_PASSWORD);
  return `authorization { users: [
    { user: "admin", password: ${password('admin')} },
    { user: ${JSON.stringify(user)}, password: ${password(user)},
      permissions: { publish: { allow: ">", deny: [${denied}] }, subscribe: ">" } }
  ] }\n`;
}
