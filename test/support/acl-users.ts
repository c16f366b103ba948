import { randomUUID } from 'node:crypto';
import { type Redis } from 'ioredis';

/** What a client logs in with. */
export interface AclUser {
  readonly name: string;
  readonly password: string;
}

/**
 * Creates a user allowed every key, channel and command but the `refused` ones (`'-time'`,
 * `'-function|list'`), as a managed service or a strict ACL leaves a store to live with.
 */
export async function createUserWithout(
  admin: Redis,
  refused: readonly string[],
  label = 'refused',
): Promise<AclUser> {
  const user = { name: `${label}-${randomUUID()}`, password: randomUUID() };
  await admin.call(
    'ACL',
    'SETUSER',
    user.name,
    'on',
    `>${user.password}`,
    '~*',
    '&*',
    '+@all',
    ...refused,
  );
  return user;
}

/** Runs `use` as a user refused `refused` (see createUserWithout), deleting the user after. */
export async function asUserWithout<T>(
  admin: Redis,
  refused: readonly string[],
  use: (user: AclUser) => Promise<T>,
): Promise<T> {
  const user = await createUserWithout(admin, refused);
  try {
    return await use(user);
  } finally {
    await admin.call('ACL', 'DELUSER', user.name);
  }
}
