import nodemailer, { type Transporter } from "nodemailer";
import { config } from "./config";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html?: string;
}

let transport: Transporter | undefined;
let transportUrl: string | undefined;

/** SMTP when SMTP_URL is set; otherwise a JSON transport whose messages go to the log. */
function mailTransport(): Transporter {
  const url = config().smtpUrl;
  if (!transport || transportUrl !== url) {
    transport = url ? nodemailer.createTransport(url) : nodemailer.createTransport({ jsonTransport: true });
    transportUrl = url;
  }
  return transport;
}

export async function sendMail(
  message: MailMessage,
  log: { info: (...args: unknown[]) => void },
): Promise<void> {
  const info = await mailTransport().sendMail({ from: config().mailFrom, ...message });
  if (!config().smtpUrl)
    log.info(`Mail (log transport) to ${message.to}: ${message.subject}\n${message.text}`);
  else log.info(`Mail sent to ${message.to}: ${message.subject} (${String(info.messageId)})`);
}
