import { namesOfUsers } from "./auth.repo";

/**
 * The auth area's read for pages that show who did something (a note's
 * author): users' names by id, in the caller's process. A user that is gone
 * has no name.
 */
export async function userNames(userIds: string[]): Promise<Map<string, string>> {
  return new Map((await namesOfUsers(userIds)).map((u) => [u.id, u.name]));
}
