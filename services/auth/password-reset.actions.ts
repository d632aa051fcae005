import { config } from "../../lib/config";
import { defineAction } from "../../lib/define-service";
import { fieldError } from "../../lib/errors";
import { sendMail } from "../../lib/mailer";
import { servePage } from "../../lib/pages";
import { consume } from "../../lib/rate-limit";
import { SESSIONS_REVOKED_EVENT } from "../../lib/session-token";
import * as repo from "./auth.repo";
import { schemas, SuccessSchema } from "./auth.schemas";

const RESET_MAILS_PER_EMAIL = { name: "reset-email", points: 5, durationSeconds: 60 * 60 };
const RESETS_PER_IP = { name: "reset-ip", points: 20, durationSeconds: 15 * 60 };

/** The auth service's password reset actions (mixed into `auth`). */
export const passwordResetActions = {
  actions: {
    /** Always 200 (no user enumeration); mails a single-use link valid for an hour. */
    forgotPassword: defineAction({
      rest: "POST /auth/forgot-password",
      auth: "public",
      params: schemas.forgotPassword,
      result: SuccessSchema,
      openapi: { tags: ["Auth"], summary: "Mail a password reset link (always 200)" },
      async handler(ctx) {
        const email = ctx.params.email;
        const user = await repo.findUserByEmail(email);
        if (user) {
          const allowed = await consume(RESET_MAILS_PER_EMAIL, email).then(
            () => true,
            () => false,
          );
          if (allowed) {
            const token = await repo.createResetToken(user.id);
            const link = `${config().publicUrl}/auth/reset-password?token=${token}`;
            // Not awaited: the answer must not reveal, by its timing or a mail failure, that the account exists.
            sendMail(
              {
                to: user.email,
                subject: "Reset your password",
                text: `Someone asked to reset the password of this account.\n\nReset it within an hour: ${link}\n\nIf it was not you, ignore this mail.`,
              },
              this.logger,
            ).catch((err: Error) =>
              this.logger.error(`Password reset mail to ${user.email} failed: ${err.message}`),
            );
          }
        }
        return { success: true as const };
      },
    }),

    /**
     * Spend a reset token: 200, or 400 for an unknown, expired or used token;
     * 20 tries per client IP per 15 minutes. Every session of the user ends.
     */
    resetPassword: defineAction({
      rest: "POST /auth/reset-password",
      auth: "public",
      params: schemas.resetPassword,
      result: SuccessSchema,
      openapi: { tags: ["Auth"], summary: "Set a new password with a reset token; ends every session" },
      async handler(ctx) {
        await consume(RESETS_PER_IP, ctx.meta.ip ?? "unknown");
        const userId = await repo.resetPassword(ctx.params.token, ctx.params.password);
        if (!userId) throw fieldError("token", "is unknown, expired or already used");
        await this.broker.broadcast(SESSIONS_REVOKED_EVENT, { userId });
        return { success: true as const };
      },
    }),

    /** The HTML page a reset link opens. */
    resetPage: defineAction({
      auth: "public",
      handler: (ctx) => servePage(ctx, "reset-password.html"),
    }),
  },
};
