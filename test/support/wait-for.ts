/** Calls `check` every 50 ms until it returns true; past the deadline, fails with its last answer. */
export async function waitFor(
  what: string,
  timeoutMs: number,
  check: () => Promise<true | string>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'not checked yet';
  while (Date.now() < deadline) {
    try {
      const answer = await check();
      if (answer === true) return;
      last = answer;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no ${what} within ${timeoutMs}ms; last seen: ${last}`);
}
