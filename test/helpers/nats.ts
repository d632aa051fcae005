import { connect } from "nats";

/** JetStream keeps a stream per channel and broker namespace: remove a run's streams so runs leave nothing behind. */
export async function dropStreams(natsUrl: string, namespace: string): Promise<void> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await nc.jetstreamManager();
    for (const stream of await jsm.streams.list().next()) {
      if (stream.config.name.startsWith(`${namespace}_`)) await jsm.streams.delete(stream.config.name);
    }
  } finally {
    await nc.close();
  }
}
